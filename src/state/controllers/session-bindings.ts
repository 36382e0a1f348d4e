/**
 * Approved session bindings (spec "Controllers"): the one Pi session a controller's interactive
 * child runs use as their origin session. Only the session itself approves (the extension sends
 * its own session id with `controller.bind` when the person types `/controller bind`); anyone may
 * revoke. Each change is one transaction with its receipt. The session id stays in this table and
 * in the child runs' bindings: views and receipts carry the binding id and times only.
 */
import type { OperationReceipt } from "../../protocol/host-operations.ts";
import { type StateStore } from "../store.ts";
import { execute, queryOne } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { type ControllerRow, findController } from "./controller-records.ts";
import { controllerNotFound, ControllerRefusal } from "./errors.ts";
import { type ControllerReceipt, recordReceipt } from "./resources.ts";

/** What clients may see of a live binding. */
export interface SessionBindingView {
  bindingId: string;
  approvedAt: number;
}

interface BindingRow {
  binding_id: string;
  session_id: string;
  approved_at: number;
}

/** The controller's live binding with its (private) session id, inside the caller's transaction. */
export function liveSessionBinding(
  store: StateStore,
  controllerId: string,
): { bindingId: string; sessionId: string } | undefined {
  const row = liveRow(store, controllerId);
  return row && { bindingId: row.binding_id, sessionId: row.session_id };
}

function liveRow(store: StateStore, controllerId: string): BindingRow | undefined {
  return queryOne<BindingRow>(
    store,
    "SELECT binding_id, session_id, approved_at FROM controller_session_bindings " +
      "WHERE controller_id = :controllerId AND revoked_at IS NULL",
    { controllerId },
  );
}

export interface SessionBindingTarget {
  projectPath: string;
  /** The controller's name in the project. */
  name: string;
}

/** `controller.bind`'s receipt: whether a binding to another session was replaced, or nothing changed. */
export type ApproveBindingResult = OperationReceipt<"controller.bind">;

/**
 * `controller.bind`: approves `sessionId` for the controller's interactive child runs (revoking
 * a binding to another session). Children that waited for a binding are reconciled again.
 */
export function approveSessionBinding(
  store: StateStore,
  opts: SessionBindingTarget & {
    sessionId: string;
    receipt?: ControllerReceipt<ApproveBindingResult>;
  },
): ApproveBindingResult {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const controller = requireController(store, opts);
    const live = liveRow(store, controller.controller_id);
    let result: ApproveBindingResult;
    if (live?.session_id === opts.sessionId) {
      result = {
        controller: controller.name,
        bindingId: live.binding_id,
        approvedAt: live.approved_at,
        replaced: false,
        unchanged: true,
      };
    } else {
      if (live) revokeRow(store, live.binding_id, now);
      const bindingId = store.ids.next("sbind");
      execute(
        store,
        "INSERT INTO controller_session_bindings (binding_id, controller_id, session_id, " +
          "approved_at) VALUES (:bindingId, :controllerId, :sessionId, :now)",
        { bindingId, controllerId: controller.controller_id, sessionId: opts.sessionId, now },
      );
      wakeWaitingChildren(store, controller.controller_id, now);
      result = {
        controller: controller.name,
        bindingId,
        approvedAt: now,
        replaced: live !== undefined,
        unchanged: false,
      };
    }
    recordReceipt(store, opts.receipt, result, controller.revision, now);
    return result;
  });
}

/** `controller.unbind`'s receipt: child runs started under the binding keep their session. */
export type RevokeBindingResult = OperationReceipt<"controller.unbind">;

/** `controller.unbind`: revokes the controller's live binding; refused when it has none. */
export function revokeSessionBinding(
  store: StateStore,
  opts: SessionBindingTarget & { receipt?: ControllerReceipt<RevokeBindingResult> },
): RevokeBindingResult {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const controller = requireController(store, opts);
    const live = liveRow(store, controller.controller_id);
    if (!live) {
      throw new ControllerRefusal(
        "notFound",
        "sessionBindingNotFound",
        `Controller ${controller.name} has no approved session binding`,
      );
    }
    revokeRow(store, live.binding_id, now);
    const active = queryOne<{ n: number }>(
      store,
      "SELECT COUNT(*) AS n FROM controller_workflow_requests w JOIN runs r ON r.run_id = " +
        "w.run_id WHERE w.binding_id = :bindingId AND r.state IN ('queued', 'running', 'waiting')",
      { bindingId: live.binding_id },
    )!.n;
    const result = {
      controller: controller.name,
      bindingId: live.binding_id,
      revokedAt: now,
      activeChildRuns: active,
    };
    recordReceipt(store, opts.receipt, result, controller.revision, now);
    return result;
  });
}

function requireController(store: StateStore, target: SessionBindingTarget): ControllerRow {
  const controller = findController(store, target.projectPath, target.name);
  if (!controller) throw controllerNotFound(target.name);
  return controller;
}

function revokeRow(store: StateStore, bindingId: string, now: number): void {
  execute(
    store,
    "UPDATE controller_session_bindings SET revoked_at = :now WHERE binding_id = :bindingId",
    { bindingId, now },
  );
}

/** Resources with a child waiting for a binding or its session are due again. */
function wakeWaitingChildren(store: StateStore, controllerId: string, now: number): void {
  execute(
    store,
    "UPDATE controller_queue SET available_at = CASE WHEN pending = 1 THEN " +
      "min(available_at, :now) ELSE :now END, pending = 1, version = version + 1, " +
      "updated_at = :now WHERE uid IN (SELECT w.uid FROM controller_workflow_requests w " +
      "JOIN controller_resources r ON r.uid = w.uid WHERE r.controller_id = :controllerId " +
      "AND r.removed_at IS NULL AND w.waiting_reason IS NOT NULL)",
    { controllerId, now },
  );
}

/**
 * Child workflow requests of a resource (`ctx.workflows.ensure`). One request per request key;
 * its current attempt is an ordinary run in the global queue (headless binding), linked by
 * `run_id`. A cancelled child is `interrupted` and the next ensure starts attempt + 1; a failed
 * one stays failed (the controller decides, e.g. with a new key). Completion enqueues the parent
 * through the `controller_child_settled` trigger. An `interactive` request's run is bound to the
 * controller's approved session (session-bindings.ts), checked in the enqueue transaction; without
 * one, or while that session has another active run, the request waits without a run and the
 * approval (or the `controller_session_freed` trigger) asks for the parent's reconcile.
 */
import type { ChildWorkflowRef, ChildWorkflowState } from "../../protocol/controller-resource.ts";
import type { Claim } from "../claims.ts";
import { type StateStore } from "../store.ts";
import { execute, queryOne } from "../statements.ts";
import { enqueueRunInTx, type EnqueueRunOptions } from "../transitions/run-enqueue.ts";
import { appendControllerEvent } from "./controller-records.ts";
import { readPinnedController } from "./controller-workers.ts";
import { ControllerRefusal, resourceLabel } from "./errors.ts";
import { reconcileWrite } from "./reconcile-claims.ts";
import { sessionReservation } from "../interaction-queries.ts";
import { liveSessionBinding } from "./session-bindings.ts";
import type { Budget } from "../../protocol/budget.ts";

/** Why an interactive request waits without a run, as `blockedDetail` explains it. */
const WAITING_DETAIL = {
  unsupportedInput: "This controller has no approved session binding: approve one in the Pi " +
    "session that should run it with /controller bind <controller>",
  sessionBusy: "The approved Pi session has another active workflow run; this child starts " +
    "when that run ends",
} as const;

interface RequestRow {
  request_id: string;
  workflow: string;
  input_fingerprint: string;
  attempt: number;
  run_id: string | null;
  error_code: string | null;
  error_message: string | null;
  interactive: number;
  waiting_reason: keyof typeof WAITING_DETAIL | null;
  run_state: string | null;
  blocked_reason: string | null;
  blocked_detail: string | null;
  run_error_code: string | null;
  run_error_message: string | null;
}

const REQUEST_SELECT = "SELECT w.request_id, w.workflow, w.input_fingerprint, w.attempt, " +
  "w.run_id, w.error_code, w.error_message, w.interactive, w.waiting_reason, " +
  "r.state AS run_state, r.blocked_reason, r.blocked_detail, " +
  "r.error_code AS run_error_code, r.error_message AS run_error_message " +
  "FROM controller_workflow_requests w LEFT JOIN runs r ON r.run_id = w.run_id";

function childState(row: RequestRow): ChildWorkflowState {
  if (row.run_id === null) {
    return row.error_code !== null ? "failed" : row.waiting_reason !== null ? "waiting" : "pending";
  }
  const blocked = row.blocked_reason !== null;
  switch (row.run_state) {
    case "queued":
      return blocked ? "waiting" : "pending";
    case "running":
      return blocked ? "waiting" : "running";
    case "waiting":
      return "waiting";
    case "completed":
      return "succeeded";
    case "cancelled":
      return "interrupted";
    default:
      return "failed";
  }
}

function toRef(row: RequestRow): ChildWorkflowRef {
  const state = childState(row);
  const code = row.error_code ?? row.run_error_code;
  const blockedReason = row.waiting_reason ?? row.blocked_reason;
  const blockedDetail = row.waiting_reason !== null
    ? WAITING_DETAIL[row.waiting_reason]
    : row.blocked_detail;
  return {
    requestId: row.request_id,
    ...(row.run_id !== null ? { runId: row.run_id } : {}),
    state,
    attempt: row.attempt,
    ...(state === "waiting" && blockedReason !== null
      ? { blockedReason, ...(blockedDetail ? { blockedDetail } : {}) }
      : {}),
    ...(state === "failed" && code !== null
      ? { error: { code, message: row.error_message ?? row.run_error_message ?? "" } }
      : {}),
  };
}

export function readChildRef(store: StateStore, requestId: string): ChildWorkflowRef | undefined {
  const row = queryOne<RequestRow>(store, `${REQUEST_SELECT} WHERE w.request_id = :requestId`, {
    requestId,
  });
  return row && toRef(row);
}

export interface EnsureChildRequestOptions {
  uid: string;
  requestKey: string;
  workflow: string;
  inputFingerprint: string;
  /** Run it in the controller's approved session (default false). */
  interactive?: boolean;
}

/** The request as it stands, and whether the caller must resolve and start its next run. */
export type ChildRequestDecision =
  | { kind: "existing"; ref: ChildWorkflowRef }
  | { kind: "start"; requestId: string; attempt: number };

export function ensureChildRequest(
  store: StateStore,
  claim: Claim,
  opts: EnsureChildRequestOptions,
): ChildRequestDecision {
  return reconcileWrite(store, claim, opts.uid, ({ now, row }) => {
    const existing = queryOne<RequestRow>(
      store,
      `${REQUEST_SELECT} WHERE w.uid = :uid AND w.request_key = :requestKey`,
      { uid: opts.uid, requestKey: opts.requestKey },
    );
    if (!existing) {
      const requestId = store.ids.next("wfreq");
      execute(
        store,
        "INSERT INTO controller_workflow_requests (request_id, uid, request_key, workflow, " +
          "input_fingerprint, attempt, interactive, created_at, updated_at) VALUES (:requestId, " +
          ":uid, :requestKey, :workflow, :fingerprint, 1, :interactive, :now, :now)",
        {
          requestId,
          uid: opts.uid,
          requestKey: opts.requestKey,
          workflow: opts.workflow,
          fingerprint: opts.inputFingerprint,
          interactive: opts.interactive ? 1 : 0,
          now,
        },
      );
      appendControllerEvent(store, opts.uid, row.resource_version, "workflow.requested", {
        requestId,
        attempt: 1,
      }, now);
      return { kind: "start", requestId, attempt: 1 };
    }
    if (
      existing.workflow !== opts.workflow ||
      existing.input_fingerprint !== opts.inputFingerprint ||
      (existing.interactive === 1) !== (opts.interactive === true)
    ) {
      throw new ControllerRefusal(
        "rejected",
        "requestKeyReused",
        `Workflow request key ${opts.requestKey} of ${
          resourceLabel(row.name, row.resource_key)
        } was already used with another workflow, input or interactive flag: use a new key for ` +
          "a new request",
      );
    }
    const ref = toRef(existing);
    // Not started yet (also a request waiting for its session): try again now.
    if (existing.run_id === null && existing.error_code === null) {
      return { kind: "start", requestId: existing.request_id, attempt: existing.attempt };
    }
    if (ref.state !== "interrupted") return { kind: "existing", ref };
    const attempt = existing.attempt + 1;
    execute(
      store,
      "UPDATE controller_workflow_requests SET attempt = :attempt, run_id = NULL, " +
        "error_code = NULL, error_message = NULL, updated_at = :now WHERE request_id = :requestId",
      { requestId: existing.request_id, attempt, now },
    );
    appendControllerEvent(store, opts.uid, row.resource_version, "workflow.requested", {
      requestId: existing.request_id,
      attempt,
    }, now);
    return { kind: "start", requestId: existing.request_id, attempt };
  });
}

export interface StartChildRunOptions {
  uid: string;
  requestId: string;
  attempt: number;
  /** The resolved run (no receipt: the reconcile's claim authorizes it). */
  run: Omit<EnqueueRunOptions, "binding" | "receipt" | "runId">;
  /** A child that cannot run headless is enqueued blocked with this reason and detail. */
  blocked?: { reason: "unsupportedInput"; detail: string };
  /**
   * The controller's budget as its definition declares it now: a total over all its child runs
   * (state/budget-stop.ts), recorded on the controller with each child it starts.
   */
  poolBudget?: Budget;
}

/**
 * Enqueues the request's run for `attempt` (at most once: a racing caller that finds the run
 * already started gets that run). An interactive request's run is bound to the controller's
 * live session binding, or the request waits (no run) for a binding or for its session.
 */
export function startChildRun(
  store: StateStore,
  claim: Claim,
  opts: StartChildRunOptions,
): ChildWorkflowRef {
  return reconcileWrite(store, claim, opts.uid, ({ now, row }) => {
    const current = requireRequest(store, opts.requestId);
    if (current.run_id !== null || current.attempt !== opts.attempt) return toRef(current);
    let binding: EnqueueRunOptions["binding"];
    let bindingId: string | null = null;
    if (current.interactive === 1) {
      const session = liveSessionBinding(store, row.controller_id);
      const waiting = !session
        ? "unsupportedInput"
        : sessionReservation(store, session.sessionId)
        ? "sessionBusy"
        : null;
      if (waiting !== null) {
        if (current.waiting_reason !== waiting) {
          setWaiting(store, opts.requestId, waiting, now);
          appendControllerEvent(store, opts.uid, row.resource_version, "workflow.waiting", {
            requestId: opts.requestId,
            reason: waiting,
          }, now);
        }
        return toRef(requireRequest(store, opts.requestId));
      }
      binding = { executionMode: "interactive", originSessionId: session!.sessionId };
      bindingId = session!.bindingId;
    } else {
      const pi = readPinnedController(store, row.controller_id)?.pi ?? null;
      binding = { executionMode: "headless", ...(pi ? { pi } : {}) };
    }
    const { runId } = enqueueRunInTx(store, { ...opts.run, binding }, now);
    joinBudgetPool(store, row.controller_id, runId, opts.poolBudget);
    if (opts.blocked) {
      execute(
        store,
        "UPDATE runs SET blocked_reason = :reason, blocked_detail = :detail WHERE run_id = :runId",
        { runId, reason: opts.blocked.reason, detail: opts.blocked.detail.slice(0, 1024) },
      );
    }
    execute(
      store,
      "UPDATE controller_workflow_requests SET run_id = :runId, binding_id = :bindingId, " +
        "waiting_reason = NULL, updated_at = :now WHERE request_id = :requestId",
      { requestId: opts.requestId, runId, bindingId, now },
    );
    appendControllerEvent(store, opts.uid, row.resource_version, "workflow.started", {
      requestId: opts.requestId,
      runId,
      attempt: opts.attempt,
      ...(opts.blocked ? { blocked: opts.blocked.reason } : {}),
      ...(bindingId !== null ? { bindingId } : {}),
    }, now);
    return toRef(requireRequest(store, opts.requestId));
  });
}

/** Resolving the request's workflow failed: the request is `failed` with that error. */
export function failChildRequest(
  store: StateStore,
  claim: Claim,
  opts: {
    uid: string;
    requestId: string;
    attempt: number;
    error: { code: string; message: string };
  },
): ChildWorkflowRef {
  return reconcileWrite(store, claim, opts.uid, ({ now, row }) => {
    const current = requireRequest(store, opts.requestId);
    if (current.run_id !== null || current.attempt !== opts.attempt) return toRef(current);
    execute(
      store,
      "UPDATE controller_workflow_requests SET error_code = :code, error_message = :message, " +
        "updated_at = :now WHERE request_id = :requestId",
      {
        requestId: opts.requestId,
        code: opts.error.code.slice(0, 128),
        message: opts.error.message.slice(0, 8192),
        now,
      },
    );
    appendControllerEvent(store, opts.uid, row.resource_version, "workflow.failed", {
      requestId: opts.requestId,
      code: opts.error.code.slice(0, 128),
    }, now);
    return toRef(requireRequest(store, opts.requestId));
  });
}

function setWaiting(
  store: StateStore,
  requestId: string,
  reason: keyof typeof WAITING_DETAIL,
  now: number,
): void {
  execute(
    store,
    "UPDATE controller_workflow_requests SET waiting_reason = :reason, updated_at = :now " +
      "WHERE request_id = :requestId",
    { requestId, reason, now },
  );
}

function requireRequest(store: StateStore, requestId: string): RequestRow {
  const row = queryOne<RequestRow>(store, `${REQUEST_SELECT} WHERE w.request_id = :requestId`, {
    requestId,
  });
  if (!row) throw new Error(`Unknown workflow request ${requestId}`);
  return row;
}

/**
 * The child run counts toward its controller's budget, which is set to what the controller's
 * definition declares now (raises made by people stay on top of it).
 */
function joinBudgetPool(
  store: StateStore,
  controllerId: string,
  runId: string,
  budget: Budget | undefined,
): void {
  execute(store, "UPDATE runs SET budget_pool_id = :controllerId WHERE run_id = :runId", {
    controllerId,
    runId,
  });
  execute(
    store,
    "UPDATE controllers SET budget_cost = :cost, budget_tokens = :tokens " +
      "WHERE controller_id = :controllerId",
    { controllerId, cost: budget?.maxCostUsd ?? null, tokens: budget?.maxTokens ?? null },
  );
}

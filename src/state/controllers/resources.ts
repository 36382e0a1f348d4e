/**
 * Resource commands (`controller.apply`, `controller.delete`, `controller.reconcile`), one
 * transaction each, with the command receipt in the same transaction. Apply also pins the
 * controller to the source its resolver loaded: a new digest re-pins it (and every live resource
 * of it reconciles again under the new code).
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { ControllerResource } from "../../protocol/controller-resource.ts";
import type { HostOperation, OperationReceipt } from "../../protocol/host-operations.ts";
import { receiptJson } from "../../protocol/host-response.ts";
import { initialResourceStatus } from "../../protocol/controller-resource.ts";
import type { PiLaunch } from "../../protocol/pi-launch.ts";
import { type CommandReceiptInput, recordHostCommandInTx } from "../host-commands.ts";
import { type StateStore } from "../store.ts";
import { execute, queryAll } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { encodeValue } from "../values.ts";
import { resolveAmbiguousEffectInTx } from "./reconcile-effects.ts";
import {
  appendControllerEvent,
  bumpResourceVersion,
  type ControllerRow,
  enqueueReconcileInTx,
  findController,
  findLiveResource,
  readResourceRow,
  removeIfDeletableInTx,
  type ResourceRow,
  toResource,
} from "./controller-records.ts";
import {
  controllerNotFound,
  ControllerRefusal,
  resourceLabel,
  resourceNotFound,
  resourceVersionConflict,
} from "./errors.ts";

/** The source a resolver child loaded for `controller.apply`. */
export interface ControllerPinInput {
  projectPath: string;
  name: string;
  /** Canonical path of the controller file. */
  sourceRef: string;
  /** Source identity (root + mounted files), as controller workers verify it. */
  source: JsonValue;
  sourceDigest: string;
  timeoutMs: number;
  /** The Pi launch for child runs' agent steps; absent: keep the one recorded before. */
  pi?: PiLaunch;
}

/**
 * A receipt committed with the change; its body, the operation's receipt, is built from the
 * committed result.
 */
export interface ControllerReceipt<R> {
  input: CommandReceiptInput;
  body: (result: R) => OperationReceipt<HostOperation>;
}

export interface ApplyResourceOptions {
  controller: ControllerPinInput;
  key: string;
  spec: JsonValue;
  /** `initialStatus(spec)` as the resolver computed it (used only for a new resource). */
  initialStatus: JsonValue;
  /** Compare-and-set: the resource version the caller saw (0: the resource must not exist). */
  expectedResourceVersion?: number;
  receipt?: ControllerReceipt<ApplyResourceResult>;
}

export interface ApplyResourceResult {
  resource: ControllerResource;
  created: boolean;
  /** The spec changed (a new generation) or the resource is new. */
  changed: boolean;
  /** The controller's pinned source changed with this apply. */
  repinned: boolean;
}

export function applyResource(store: StateStore, opts: ApplyResourceOptions): ApplyResourceResult {
  const spec = encodeValue("resource spec", opts.spec);
  const status = encodeValue("resource status", initialResourceStatus(opts.initialStatus));
  const source = encodeValue("controller source", opts.controller.source);
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const pin = pinController(store, opts.controller, source, now);
    const name = opts.controller.name;
    const existing = findLiveResource(store, pin.controllerId, opts.key);
    const expected = opts.expectedResourceVersion;
    if (expected !== undefined && expected !== (existing?.resource_version ?? 0)) {
      throw resourceVersionConflict(name, opts.key, expected, existing?.resource_version ?? 0);
    }
    let uid: string;
    let created = false;
    let changed = false;
    if (!existing) {
      uid = store.ids.next("res");
      execute(
        store,
        "INSERT INTO controller_resources (uid, controller_id, resource_key, resource_version, " +
          "generation, spec_json, status_json, finalizers_json, created_at, updated_at) VALUES " +
          "(:uid, :controllerId, :key, 1, 1, :spec, :status, '[]', :now, :now)",
        { uid, controllerId: pin.controllerId, key: opts.key, spec, status, now },
      );
      execute(
        store,
        "INSERT INTO controller_queue (uid, pending, available_at, version, " +
          "consecutive_errors, updated_at) VALUES (:uid, 1, :now, 1, 0, :now)",
        { uid, now },
      );
      appendControllerEvent(store, uid, 1, "resource.created", { generation: 1 }, now);
      created = changed = true;
    } else {
      uid = existing.uid;
      if (existing.deletion_requested_at !== null) {
        throw new ControllerRefusal(
          "rejected",
          "resourceDeleting",
          `Cannot apply ${resourceLabel(name, opts.key)}: it is being deleted; apply it again ` +
            "once it is gone",
        );
      }
      if (existing.spec_json !== spec) {
        const version = bumpResourceVersion(store, uid, now);
        execute(
          store,
          "UPDATE controller_resources SET spec_json = :spec, generation = generation + 1 " +
            "WHERE uid = :uid",
          { uid, spec },
        );
        enqueueReconcileInTx(store, uid, now);
        appendControllerEvent(store, uid, version, "resource.specUpdated", {
          generation: existing.generation + 1,
        }, now);
        changed = true;
      }
    }
    if (pin.repinned) {
      for (const other of liveResourceIds(store, pin.controllerId)) {
        enqueueReconcileInTx(store, other, now);
      }
    }
    const result: ApplyResourceResult = {
      resource: toResource(readResourceRow(store, uid)!),
      created,
      changed,
      repinned: pin.repinned,
    };
    recordReceipt(store, opts.receipt, result, result.resource.metadata.resourceVersion, now);
    return result;
  });
}

/**
 * Inserts the controller, or re-pins it when the resolved source differs from the pinned one or
 * it is blocked (a fresh, verified resolve is the operator's way to unblock it).
 */
function pinController(
  store: StateStore,
  pin: ControllerPinInput,
  source: string,
  now: number,
): { controllerId: string; repinned: boolean } {
  const existing = findController(store, pin.projectPath, pin.name);
  const pinned = pinSource(store, existing, pin, source, now);
  if (pin.pi) {
    execute(
      store,
      "UPDATE controllers SET pi_command = :command, pi_args_json = :args " +
        "WHERE controller_id = :controllerId",
      {
        controllerId: pinned.controllerId,
        command: pin.pi.command,
        args: encodeValue("Pi arguments", pin.pi.args),
      },
    );
  }
  return pinned;
}

function pinSource(
  store: StateStore,
  existing: ReturnType<typeof findController>,
  pin: ControllerPinInput,
  source: string,
  now: number,
): { controllerId: string; repinned: boolean } {
  if (!existing) {
    const controllerId = store.ids.next("ctl");
    execute(
      store,
      "INSERT INTO controllers (controller_id, project_path, name, source_ref, source_json, " +
        "source_digest, timeout_ms, revision, created_at, updated_at) VALUES (:controllerId, " +
        ":projectPath, :name, :sourceRef, :source, :digest, :timeoutMs, 1, :now, :now)",
      {
        controllerId,
        projectPath: pin.projectPath,
        name: pin.name,
        sourceRef: pin.sourceRef,
        source,
        digest: pin.sourceDigest,
        timeoutMs: pin.timeoutMs,
        now,
      },
    );
    return { controllerId, repinned: false };
  }
  const same = existing.source_digest === pin.sourceDigest &&
    existing.source_ref === pin.sourceRef && existing.timeout_ms === pin.timeoutMs;
  if (same && existing.blocked_reason === null) {
    return { controllerId: existing.controller_id, repinned: false };
  }
  execute(
    store,
    "UPDATE controllers SET source_ref = :sourceRef, source_json = :source, source_digest = " +
      ":digest, timeout_ms = :timeoutMs, blocked_reason = NULL, blocked_detail = NULL, " +
      "revision = revision + 1, updated_at = :now WHERE controller_id = :controllerId",
    {
      controllerId: existing.controller_id,
      sourceRef: pin.sourceRef,
      source,
      digest: pin.sourceDigest,
      timeoutMs: pin.timeoutMs,
      now,
    },
  );
  return { controllerId: existing.controller_id, repinned: true };
}

function liveResourceIds(store: StateStore, controllerId: string): string[] {
  return queryAll<{ uid: string }>(
    store,
    "SELECT uid FROM controller_resources WHERE controller_id = :controllerId " +
      "AND removed_at IS NULL",
    { controllerId },
  ).map((r) => r.uid);
}

export interface ResourceCommandOptions<R> {
  projectPath: string;
  name: string;
  key: string;
  expectedResourceVersion?: number;
  receipt?: ControllerReceipt<R>;
}

export interface DeleteResourceResult {
  resource: ControllerResource;
  /** Removed now (no finalizers and no reconcile in flight); else it waits for its finalizers. */
  removed: boolean;
}

/**
 * `controller.delete`: sets the deletion timestamp (once) and asks for a reconcile, so the
 * controller can finish its cleanup and clear its finalizers. A resource without finalizers and
 * without a reconcile in flight is removed in the same transaction.
 */
export function requestDeletion(
  store: StateStore,
  opts: ResourceCommandOptions<DeleteResourceResult>,
): DeleteResourceResult {
  return resourceCommand(store, opts, (row, now) => {
    if (row.deletion_requested_at === null) {
      const version = bumpResourceVersion(store, row.uid, now);
      execute(
        store,
        "UPDATE controller_resources SET deletion_requested_at = :now WHERE uid = :uid",
        { uid: row.uid, now },
      );
      enqueueReconcileInTx(store, row.uid, now);
      appendControllerEvent(store, row.uid, version, "resource.deletionRequested", {}, now);
    }
    const removed = removeIfDeletableInTx(store, row.uid, now);
    return { resource: toResource(readResourceRow(store, row.uid)!), removed };
  });
}

export interface ReconcileRequestResult {
  resource: ControllerResource;
  resolvedEffect?: { effectId: string; state: "applied" | "pending" };
}

export interface EffectVerdict {
  effectId: string;
  verdict: "applied" | "notApplied";
  receipt?: JsonValue;
}

/**
 * `controller.reconcile`: the resource is due now (an error backoff is cut short). With
 * `resolveEffect`, first the operator's reviewed verdict on one of its ambiguous effects, in the
 * same transaction (reconcile-effects.ts `resolveAmbiguousEffectInTx`).
 */
export function requestReconcile(
  store: StateStore,
  opts: ResourceCommandOptions<ReconcileRequestResult> & { resolveEffect?: EffectVerdict },
): ReconcileRequestResult {
  return resourceCommand(store, opts, (row, now) => {
    const resolvedEffect = opts.resolveEffect &&
      resolveAmbiguousEffectInTx(store, row, opts.resolveEffect, now);
    // A controller blocked on its source is tried again, as `resume` does for a run blocked on a
    // changed source: the person restored it (a worker that still finds it wrong blocks it
    // again). Before, only an apply unblocked it, and a resource being deleted refuses applies.
    execute(
      store,
      "UPDATE controllers SET blocked_reason = NULL, blocked_detail = NULL, " +
        "revision = revision + 1, updated_at = :now WHERE controller_id = :controllerId " +
        "AND blocked_reason IS NOT NULL",
      { controllerId: row.controller_id, now },
    );
    execute(
      store,
      "UPDATE controller_queue SET pending = 1, available_at = :now, version = version + 1, " +
        "updated_at = :now WHERE uid = :uid",
      { uid: row.uid, now },
    );
    appendControllerEvent(
      store,
      row.uid,
      row.resource_version,
      "reconcile.requested",
      {},
      now,
    );
    return { resource: toResource(row), ...(resolvedEffect ? { resolvedEffect } : {}) };
  });
}

function resourceCommand<R extends { resource: ControllerResource }>(
  store: StateStore,
  opts: ResourceCommandOptions<R>,
  apply: (row: ResourceRow, now: number) => R,
): R {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const controller: ControllerRow | undefined = findController(
      store,
      opts.projectPath,
      opts.name,
    );
    if (!controller) throw controllerNotFound(opts.name);
    const row = findLiveResource(store, controller.controller_id, opts.key);
    if (!row) throw resourceNotFound(opts.name, opts.key);
    const expected = opts.expectedResourceVersion;
    if (expected !== undefined && expected !== row.resource_version) {
      throw resourceVersionConflict(opts.name, opts.key, expected, row.resource_version);
    }
    const result = apply(row, now);
    recordReceipt(store, opts.receipt, result, result.resource.metadata.resourceVersion, now);
    return result;
  });
}

export function recordReceipt<R>(
  store: StateStore,
  receipt: ControllerReceipt<R> | undefined,
  result: R,
  revision: number,
  now: number,
): void {
  if (!receipt) return;
  recordHostCommandInTx(store, { ...receipt.input, receipt: receiptJson(receipt.body(result)) }, {
    runId: null,
    revision,
    now,
  });
}

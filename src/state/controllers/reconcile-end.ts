/**
 * How a reconcile ends, one transaction each under its claim:
 *
 *   finishReconcile     the code returned settled / requeue / requeueAfter (a compare-and-set
 *                       status write on the version the reconcile read), or threw (backoff)
 *   timeOutReconcile    the host deadline passed: requeued with backoff even if the code still
 *                       runs; effects it left applying become ambiguous
 *   interruptReconcile  its worker died or the host stops: requeued; applying effects return to
 *                       pending (read back or retried under their key), or become ambiguous
 *                       when they are neither
 *
 * Each clears the claim and, for a resource being deleted with no finalizers left, removes it.
 */
import type { Claim } from "../claims.ts";
import type { ReconcileOutcome } from "../../protocol/controller-worker.ts";

export type { ReconcileOutcome };
import { type StateStore } from "../store.ts";
import { queryOne } from "../statements.ts";
import { encodeValue } from "../values.ts";
import { appendControllerEvent } from "./controller-records.ts";
import {
  settleReconcileEffectInTx,
  type SettleReconcileEffectOptions,
} from "./reconcile-effects.ts";
import {
  endClaimInTx,
  markApplyingEffectsAmbiguous,
  reconcileWrite,
  releaseApplyingEffects,
} from "./reconcile-claims.ts";

export interface FinishReconcileOptions {
  uid: string;
  /** The resource version the reconcile read: the status write is compare-and-set on it. */
  expectedResourceVersion: number;
  outcome: ReconcileOutcome;
  /** Backoff before the next attempt after an error (the host computes it, with jitter). */
  retryDelayMs: number;
  /**
   * The settle of the effect the reconcile applied last, folded into its end (the reconcile
   * returned right after `ensure` answered): committed first, in the same transaction.
   */
  settle?: Omit<SettleReconcileEffectOptions, "uid">;
}

export interface ReconcileEndResult {
  resourceVersion: number;
  /** The resource changed under the reconcile: its status was not written; it runs again now. */
  conflict: boolean;
  removed: boolean;
  /** Effects the reconcile left applying that are now ambiguous. */
  ambiguousEffects: number;
}

export function finishReconcile(
  store: StateStore,
  claim: Claim,
  opts: FinishReconcileOptions,
): ReconcileEndResult {
  const outcome = opts.outcome;
  const status = outcome.kind === "error" ? null : encodeValue("resource status", outcome.status);
  const finalizers = outcome.kind !== "error" && outcome.finalizers !== undefined
    ? encodeValue("finalizers", outcome.finalizers)
    : null;
  return reconcileWrite(store, claim, opts.uid, (tx) => {
    const { now, row } = tx;
    if (opts.settle) settleReconcileEffectInTx(store, tx, { ...opts.settle, uid: opts.uid });
    const ambiguousEffects = markApplyingEffectsAmbiguous(store, opts.uid, now);
    let version = row.resource_version;
    if (outcome.kind === "error") {
      appendControllerEvent(store, opts.uid, version, "reconcile.failed", {
        code: outcome.error.code,
        retryDelayMs: opts.retryDelayMs,
        ambiguousEffects,
      }, now);
      const removed = endClaimInTx(
        store,
        opts.uid,
        now,
        { pending: true, availableAt: now + opts.retryDelayMs },
        { count: "increase", code: outcome.error.code, message: outcome.error.message },
        row,
      );
      return { resourceVersion: version, conflict: false, removed, ambiguousEffects };
    }
    if (version !== opts.expectedResourceVersion) {
      appendControllerEvent(store, opts.uid, version, "reconcile.conflict", {
        expected: opts.expectedResourceVersion,
        ambiguousEffects,
      }, now);
      const removed = endClaimInTx(store, opts.uid, now, { pending: true, availableAt: now }, {
        count: "keep",
      }, row);
      return { resourceVersion: version, conflict: true, removed, ambiguousEffects };
    }
    // The version bump every write makes, with the status write in the same statement.
    version = queryOne<{ resource_version: number }>(
      store,
      "UPDATE controller_resources SET resource_version = resource_version + 1, updated_at = " +
        ":now, status_json = :status, finalizers_json = COALESCE(:finalizers, finalizers_json) " +
        "WHERE uid = :uid RETURNING resource_version",
      { uid: opts.uid, now, status, finalizers },
    )!.resource_version;
    const afterMs = outcome.kind === "requeue" ? Math.max(0, outcome.afterMs ?? 0) : 0;
    appendControllerEvent(
      store,
      opts.uid,
      version,
      outcome.kind === "settled" ? "reconcile.settled" : "reconcile.requeued",
      { generation: row.generation, ...(afterMs > 0 ? { afterMs } : {}), ambiguousEffects },
      now,
    );
    const removed = endClaimInTx(
      store,
      opts.uid,
      now,
      { pending: outcome.kind === "requeue", availableAt: now + afterMs },
      { count: "reset" },
      row,
    );
    return { resourceVersion: version, conflict: false, removed, ambiguousEffects };
  });
}

/**
 * The reconcile deadline passed. The claim ends now whatever the code still does (a later
 * proposal of it meets a released claim); the resource backs off like after an error.
 */
export function timeOutReconcile(
  store: StateStore,
  claim: Claim,
  opts: { uid: string; timeoutMs: number; retryDelayMs: number },
): ReconcileEndResult {
  return reconcileWrite(store, claim, opts.uid, ({ now, row }) => {
    const ambiguousEffects = markApplyingEffectsAmbiguous(store, opts.uid, now);
    appendControllerEvent(store, opts.uid, row.resource_version, "reconcile.timedOut", {
      timeoutMs: opts.timeoutMs,
      retryDelayMs: opts.retryDelayMs,
      ambiguousEffects,
    }, now);
    const removed = endClaimInTx(
      store,
      opts.uid,
      now,
      { pending: true, availableAt: now + opts.retryDelayMs },
      {
        count: "increase",
        code: "reconcileTimedOut",
        message: `The reconcile did not finish within ${opts.timeoutMs} ms`,
      },
      row,
    );
    return { resourceVersion: row.resource_version, conflict: false, removed, ambiguousEffects };
  });
}

export interface InterruptReconcileOptions {
  uid: string;
  /** Why: `workerCrashed` counts as an error (backoff); `hostShutdown` and the like do not. */
  reason: string;
  countsAsError: boolean;
  retryDelayMs: number;
}

/** The reconcile's worker is gone (crash, kill) or the host stops: it runs again later. */
export function interruptReconcile(
  store: StateStore,
  claim: Claim,
  opts: InterruptReconcileOptions,
): ReconcileEndResult {
  return reconcileWrite(store, claim, opts.uid, ({ now, row }) => {
    const released = releaseApplyingEffects(store, opts.uid, now);
    appendControllerEvent(store, opts.uid, row.resource_version, "reconcile.interrupted", {
      reason: opts.reason.slice(0, 64),
      pendingEffects: released.pending,
      ambiguousEffects: released.ambiguous,
    }, now);
    const removed = endClaimInTx(
      store,
      opts.uid,
      now,
      { pending: true, availableAt: now + (opts.countsAsError ? opts.retryDelayMs : 0) },
      opts.countsAsError
        ? {
          count: "increase",
          code: opts.reason.slice(0, 128),
          message: "The controller worker stopped during the reconcile",
        }
        : { count: "keep" },
      row,
    );
    return {
      resourceVersion: row.resource_version,
      conflict: false,
      removed,
      ambiguousEffects: released.ambiguous,
    };
  });
}

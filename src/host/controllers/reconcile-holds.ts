/**
 * The reconciles this host holds, from assignment to release. Each holds the lease
 * `reconcile:<uid>`, renewed by one host timer that runs only while some reconcile is held. At
 * the reconcile deadline the host commits the requeue (with backoff) first, then aborts the
 * reconcile; if the worker does not let go within the kill grace (code that ignores its signal or
 * blocks its event loop), the worker's group is killed.
 */
import { renewClaim } from "../../state/claims.ts";
import type { ReconcileClaim } from "../../state/controllers/reconcile-claims.ts";
import { interruptReconcile, timeOutReconcile } from "../../state/controllers/reconcile-end.ts";
import { ClaimLostError } from "../../state/errors.ts";
import { reconcileIdOf } from "../../protocol/controller-worker.ts";
import { logError } from "../host-log.ts";
import type { HostContext } from "../host-context.ts";
import {
  type ActiveReconcile,
  type ControllerWorker,
  pushToWorker,
  stopControllerWorker,
} from "../supervision/controllers/controller-worker.ts";
import type { ControllerOptions } from "./options.ts";
import { clearAll, later, TIMER_SLACK_MS } from "../supervision/children/timers.ts";

/** What the scheduler's parts share: the host context and the live controller workers. */
export interface Fleet {
  ctx: HostContext;
  options: ControllerOptions;
  /** The live controller worker of each controller (by controller id). */
  workers: Map<string, ControllerWorker>;
  /** Backoff after `errors` errors in a row. */
  retryDelayMs(errors: number): number;
  /** Queues one scheduler tick. */
  schedule(): void;
  isShuttingDown(): boolean;
}

export interface ReconcileHolds {
  /** Reconciles assigned and not yet released, across all workers. */
  inFlight(): number;
  /** Resources whose reconcile this host still holds (recovery must not take them). */
  held(): Set<string>;
  assign(worker: ControllerWorker, claimed: ReconcileClaim): void;
  /** The worker no longer holds the reconcile (finished, or the worker is gone). */
  release(worker: ControllerWorker, reconcile: ActiveReconcile): void;
  /** Starts or stops the renewal timer as reconciles are held or not. */
  renewWhileHeld(): void;
  /** Commits the interruption of every reconcile the worker holds and has not ended. */
  interruptHeld(
    worker: ControllerWorker,
    why: { reason: string; countsAsError: boolean; retry: boolean },
  ): void;
}

/** The worker has nothing to do: a tick after the idle period stops it unless work came. */
export function markIdle(fleet: Fleet, worker: ControllerWorker): void {
  worker.idleSince = fleet.ctx.clock.now();
  later(worker.timers, fleet.options.workerIdleMs + TIMER_SLACK_MS, fleet.schedule);
}

export function createReconcileHolds(fleet: Fleet): ReconcileHolds {
  const { ctx } = fleet;
  let renewTimer: ReturnType<typeof setInterval> | null = null;

  const holds: ReconcileHolds = {
    inFlight() {
      let n = 0;
      for (const worker of fleet.workers.values()) n += worker.reconciles.size;
      return n;
    },
    held() {
      const uids = new Set<string>();
      for (const { reconcile } of each(fleet)) if (!reconcile.ended) uids.add(reconcile.uid);
      return uids;
    },
    renewWhileHeld() {
      if (holds.inFlight() > 0 && !fleet.isShuttingDown()) {
        renewTimer ??= setInterval(() => renew(fleet), ctx.options.claimRenewMs);
      } else if (renewTimer) {
        clearInterval(renewTimer);
        renewTimer = null;
      }
    },
    assign(worker, claimed) {
      const reconcile: ActiveReconcile = {
        id: reconcileIdOf(claimed.uid, claimed.claim.generation),
        uid: claimed.uid,
        claim: claimed.claim,
        resourceVersion: claimed.resource.metadata.resourceVersion,
        consecutiveErrors: claimed.consecutiveErrors,
        ended: false,
        timers: new Set(),
      };
      worker.reconciles.set(reconcile.id, reconcile);
      holds.renewWhileHeld();
      const deadlineAt = ctx.clock.now() + worker.timeoutMs;
      later(reconcile.timers, worker.timeoutMs, () => onDeadline(fleet, worker, reconcile));
      pushToWorker(worker, {
        kind: "reconcile.assign",
        reconcileId: reconcile.id,
        resource: claimed.resource,
        deadlineAt,
      });
    },
    release(worker, reconcile) {
      reconcile.ended = true;
      clearAll(reconcile.timers);
      worker.reconciles.delete(reconcile.id);
      if (worker.reconciles.size === 0) markIdle(fleet, worker);
      holds.renewWhileHeld();
      fleet.schedule();
    },
    interruptHeld(worker, why) {
      for (const reconcile of worker.reconciles.values()) {
        if (!reconcile.ended) {
          try {
            interruptReconcile(ctx.store, reconcile.claim, {
              uid: reconcile.uid,
              reason: why.reason,
              countsAsError: why.countsAsError,
              retryDelayMs: why.retry ? fleet.retryDelayMs(reconcile.consecutiveErrors + 1) : 0,
            });
          } catch (error) {
            // Expired meanwhile: the recovery sweep settles it.
            if (!(error instanceof ClaimLostError)) {
              ctx.log("controller.interrupt_failed", { error: logError(error) });
            }
          }
        }
        reconcile.ended = true;
        clearAll(reconcile.timers);
      }
    },
  };

  return holds;
}

function* each(fleet: Fleet): Generator<{ worker: ControllerWorker; reconcile: ActiveReconcile }> {
  for (const worker of fleet.workers.values()) {
    for (const reconcile of worker.reconciles.values()) yield { worker, reconcile };
  }
}

/** Extends every held reconcile claim; one found lost is aborted in its worker. */
function renew(fleet: Fleet): void {
  for (const { worker, reconcile } of each(fleet)) {
    if (reconcile.ended) continue;
    try {
      renewClaim(fleet.ctx.store, reconcile.claim);
    } catch (error) {
      if (!(error instanceof ClaimLostError)) continue; // busy: the next round retries
      reconcile.ended = true;
      pushToWorker(worker, {
        kind: "reconcile.abort",
        reconcileId: reconcile.id,
        reason: "claimLost",
      });
    }
  }
}

/** The reconcile's deadline passed: commit its time-out, abort it, stop a worker that holds on. */
function onDeadline(fleet: Fleet, worker: ControllerWorker, reconcile: ActiveReconcile): void {
  const { ctx } = fleet;
  if (reconcile.ended) return;
  try {
    // Commit first: a later proposal of this reconcile meets a released claim.
    timeOutReconcile(ctx.store, reconcile.claim, {
      uid: reconcile.uid,
      timeoutMs: worker.timeoutMs,
      retryDelayMs: fleet.retryDelayMs(reconcile.consecutiveErrors + 1),
    });
  } catch (error) {
    if (!(error instanceof ClaimLostError)) {
      ctx.log("controller.deadline_failed", { error: logError(error) });
    }
  }
  reconcile.ended = true;
  ctx.log("controller.reconcile_timed_out", { controller: worker.controllerName });
  pushToWorker(worker, {
    kind: "reconcile.abort",
    reconcileId: reconcile.id,
    reason: "timedOut",
  });
  // Code that ignores its signal (or blocks the worker's event loop) never lets go.
  later(reconcile.timers, ctx.options.killGraceMs, () => {
    if (worker.reconciles.has(reconcile.id)) stopControllerWorker(ctx, worker, "stuck");
  });
  fleet.schedule();
}

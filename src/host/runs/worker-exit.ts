/**
 * After a worker process is gone: record its one terminal epoch outcome, then decide what the
 * run needs from the last committed attempt. A worker exit is never by itself a run failure:
 *
 *   settled (terminal, park or block committed)   -> epoch `exited`; nothing else to do
 *   paused / cancelled / shutdown                 -> epoch `cancelled`; the command committed first
 *   claim lost                                    -> epoch `claimLost`; a handoff, never a run event
 *   node deadline (host enforced)                 -> epoch `timedOut`; timeOutAttempt committed first
 *   anything else (crash, startup deadline, output or protocol violation)
 *                                                 -> epoch `crashed` (`timedOut` for the startup
 *      and between-attempts deadlines); the open attempt is
 *      interrupted (pure: runs again) or blocked as effectAmbiguous (external). After
 *      `maxCrashes` crash-like exits in a row with no committed progress the run fails with
 *      the failure class of the last one.
 */
import type { FailureClass } from "../../protocol/failures.ts";
import { ClaimLostError } from "../../state/errors.ts";
import { failRun } from "../../state/transitions/run-end.ts";
import { interruptRun } from "../../state/transitions/run-recovery.ts";
import { finishWorkerEpoch, type WorkerOutcome } from "../../state/transitions/workers.ts";
import { fingerprint } from "../../protocol/canonical-json.ts";
import type { HostContext } from "../host-context.ts";
import { crashPoint } from "../../base/crash-point.ts";
import type { ActiveWorker } from "../supervision/active-worker.ts";
import type { ChildExit } from "../supervision/children/spawn-child.ts";
import type { Claim } from "../../state/claims.ts";
import { logError } from "../host-log.ts";
import {
  holdsClaim,
  isKept,
  isSettled,
  releaseClaim,
  stopReasonOf,
} from "../supervision/worker-life.ts";

/** Crash-like exits in a row (no committed progress between) before the run fails. */
export const DEFAULT_MAX_CRASHES = 3;

export interface CrashCounter {
  /** Adds one crash of `runId`; returns the count since the last progress. */
  add(runId: string): number;
  reset(runId: string): void;
}

export function createCrashCounter(): CrashCounter {
  const counts = new Map<string, number>();
  return {
    add(runId) {
      const next = (counts.get(runId) ?? 0) + 1;
      counts.set(runId, next);
      return next;
    },
    reset(runId) {
      counts.delete(runId);
    },
  };
}

export function epochStatusOf(worker: ActiveWorker): WorkerOutcome {
  if (isSettled(worker)) return "exited";
  switch (stopReasonOf(worker)) {
    case "paused":
    case "cancelled":
    case "shutdown":
      return "cancelled";
    case "claimLost":
      return "claimLost";
    case "timedOut":
    case "startupTimedOut":
    case "boundaryTimedOut":
      return "timedOut";
    default:
      return "crashed";
  }
}

/** The worker stopped on its own or broke a rule: the run must be settled by the host. */
function isCrashLike(worker: ActiveWorker): boolean {
  if (isSettled(worker)) return false;
  const reason = stopReasonOf(worker);
  return reason === null || reason === "startupTimedOut" || reason === "boundaryTimedOut" ||
    reason === "outputExceeded" || reason === "memoryExceeded" || reason === "protocolRejected";
}

/** The failure class a crash-like exit is reported under. */
function crashClass(worker: ActiveWorker): FailureClass {
  const reason = stopReasonOf(worker);
  if (reason === "protocolRejected") return "protocolRejected";
  if (reason === "startupTimedOut" || reason === "boundaryTimedOut") {
    return "workerTimedOut";
  }
  return "workerCrashed";
}

export function handleWorkerExit(
  ctx: HostContext,
  worker: ActiveWorker,
  exit: ChildExit,
  crashes: CrashCounter,
  maxCrashes: number,
): void {
  const status = epochStatusOf(worker);
  const diagnostic = worker.diagnostic ??
    (exit.signal ? `exit by ${exit.signal}` : `exit code ${exit.code}`);
  try {
    finishWorkerEpoch(ctx.store, {
      workerEpoch: worker.workerEpoch,
      status,
      exitCode: exit.code,
      signal: exit.signal,
      diagnosticHash: fingerprint(diagnostic),
      // Kept as the run's prepared process: nothing waits on this record (interactive.md).
      synced: !isKept(worker),
    });
  } catch (error) {
    ctx.log("worker.epoch_finish_failed", { error: logError(error) });
  }
  crashPoint("host.exit.afterEpoch");
  ctx.log("worker.exited", {
    run: worker.runId,
    generation: worker.generation,
    status,
    code: exit.code,
    signal: exit.signal,
  });
  if (!isCrashLike(worker) || !holdsClaim(worker)) return;

  const failureClass = crashClass(worker);
  if (
    settleCrash(
      ctx,
      worker.runId,
      worker.claim,
      failureClass,
      crashes,
      maxCrashes,
      (count) => `The run's worker stopped ${count} times without progress: ${diagnostic}`,
    )
  ) {
    releaseClaim(worker);
  }
}

/**
 * The launch claim was taken but no worker process could be spawned: the epoch is `crashed` and
 * the run is settled at once (counted like a crash), instead of staying `starting` until its
 * claim expires and retrying forever. Only the error code is kept (a message may name a path).
 */
export function handleSpawnFailure(
  ctx: HostContext,
  failure: { runId: string; claim: Claim; workerEpoch: string; code: string },
  crashes: CrashCounter,
  maxCrashes: number,
): void {
  try {
    finishWorkerEpoch(ctx.store, {
      workerEpoch: failure.workerEpoch,
      status: "crashed",
      exitCode: null,
      signal: null,
      diagnosticHash: fingerprint(failure.code),
    });
  } catch (error) {
    ctx.log("worker.epoch_finish_failed", { error: logError(error) });
  }
  ctx.log("worker.spawn_failed", { run: failure.runId, code: failure.code });
  settleCrash(
    ctx,
    failure.runId,
    failure.claim,
    "workerCrashed",
    crashes,
    maxCrashes,
    (count) => `The run's worker could not be started (${failure.code}), ${count} times in a row`,
  );
}

/**
 * One crash-like end of a worker epoch: interrupt the run (pure work runs again, an uncertain
 * external attempt blocks `effectAmbiguous`), or fail it after `maxCrashes` in a row. Returns
 * whether the claim was released by it.
 */
function settleCrash(
  ctx: HostContext,
  runId: string,
  claim: Claim,
  failureClass: FailureClass,
  crashes: CrashCounter,
  maxCrashes: number,
  failMessage: (count: number) => string,
): boolean {
  const count = crashes.add(runId);
  try {
    if (count >= maxCrashes) {
      failRun(ctx.store, claim, { error: { code: failureClass, message: failMessage(count) } });
      crashes.reset(runId);
    } else {
      interruptRun(ctx.store, claim, { reason: failureClass });
    }
    crashPoint("host.exit.afterSettle");
    return true;
  } catch (error) {
    // Claim gone (expired while we were busy): recovery of the expired row takes over.
    if (!(error instanceof ClaimLostError)) throw error;
    ctx.log("worker.claim_lost_on_exit", { run: runId, reason: error.reason });
    return false;
  }
}

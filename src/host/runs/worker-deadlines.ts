/**
 * Host-enforced deadlines of one worker epoch after its start (the start-up deadline until
 * `worker.ready` is the kit's, children/child-deadline.ts): each node attempt's committed deadline
 * (plus the kill grace), the bound on workflow code between attempts (`boundaryMs`: loading,
 * routing, timeout callbacks), and the leave deadline from the run's settlement to the process's
 * end (its goodbye, `worker.exiting`, and exit: a loop stuck after the run settled would otherwise
 * hold the process forever). The worker's own timers are only a courtesy; these fire even when
 * its event loop is stuck.
 */
import { ClaimLostError } from "../../state/errors.ts";
import { timeOutAttempt } from "../../state/transitions/node-attempts.ts";
import { crashPoint } from "../../base/crash-point.ts";
import type { HostContext } from "../host-context.ts";
import type { ActiveWorker, StopReason } from "../supervision/active-worker.ts";
import type { CrashCounter } from "./worker-exit.ts";
import { logError } from "../host-log.ts";
import { clearAll, later } from "../supervision/children/timers.ts";
import {
  awaitsGoodbye,
  isSettled,
  releaseClaim,
  stopReasonOf,
} from "../supervision/worker-life.ts";

type Timer = ReturnType<typeof setTimeout>;

/** A bound on workflow code until the next boundary; `at` in `performance.now()` time. */
interface Boundary {
  at: number;
  ms: number;
  reason: StopReason;
  what: string;
}

export interface WorkerDeadlines {
  /** The worker said ready: it loads its workflow next, bounded like the start. */
  onReady(worker: ActiveWorker): void;
  /** `node.started` committed: the attempt's deadline timer replaces the boundary bound. */
  onAttemptStarted(worker: ActiveWorker): void;
  /**
   * The attempt closed: its deadline is off, workflow code until the next boundary is bounded;
   * when the close settled the run, the process's leaving is bounded instead.
   */
  onAttemptClosed(worker: ActiveWorker): void;
  /**
   * Supervision starts: an epoch whose first step was committed ahead (in the acceptance that
   * launched it) is settled before it says anything, so its leaving is bounded from here.
   */
  onSupervised(worker: ActiveWorker): void;
  /** The open attempt's deadline is off (its failure was recorded otherwise). */
  clearAttemptDeadline(worker: ActiveWorker): void;
  /** The epoch ended: forget its timers. */
  forget(worker: ActiveWorker): void;
}

/**
 * How long a worker may take to leave once its run settled: it first stops its child groups
 * (bounded at 8 s in the worker, run-worker.ts), then says goodbye and exits. A deadline of its
 * own: `boundaryMs` bounds workflow code and may be set far below that cleanup.
 */
export const LEAVE_MS = 30_000;

interface DeadlineDeps {
  stop(worker: ActiveWorker, reason: StopReason, diagnostic: string): void;
  crashes: CrashCounter;
  /** The leave deadline: LEAVE_MS unless a test shortens it. */
  leaveMs: number;
}

export function createWorkerDeadlines(ctx: HostContext, deps: DeadlineDeps): WorkerDeadlines {
  const attemptDeadlines = new Map<ActiveWorker, Timer>();
  // From `worker.ready` to the first attempt, and from each closed attempt to the next boundary:
  // workflow code (loading, routing, timeout callbacks, presentationPrompt) runs there. The bound
  // is set at every close and lifted at every start, thousands of times a second in a run of
  // small nodes, so its timer is not cleared and armed again each time: it stays, and when it
  // fires early (the bound moved on or was lifted) it sleeps for what is left, or ends.
  const boundaries = new Map<ActiveWorker, Boundary>();
  const boundaryTimers = new Map<ActiveWorker, { timer: Timer; due: number }>();

  const armBoundary = (worker: ActiveWorker, due: number) => {
    const timer = later(worker.timers, due - performance.now(), () => {
      boundaryTimers.delete(worker);
      const bound = boundaries.get(worker);
      if (bound === undefined) return; // lifted: the next close arms it again
      if (bound.at > performance.now()) return armBoundary(worker, bound.at);
      boundaries.delete(worker);
      if (!isSettled(worker) && worker.openAttempt === null) {
        deps.stop(worker, bound.reason, `workerTimedOut: ${bound.what} ran past ${bound.ms} ms`);
      }
    });
    boundaryTimers.set(worker, { timer, due });
  };
  const awaitBoundary = (worker: ActiveWorker, ms: number, reason: StopReason, what: string) => {
    const at = performance.now() + ms;
    boundaries.set(worker, { at, ms, reason, what });
    const pending = boundaryTimers.get(worker);
    if (pending !== undefined && pending.due <= at) return;
    // None yet, or one due after this bound (a longer bound before): it would fire too late.
    if (pending !== undefined) {
      clearTimeout(pending.timer);
      worker.timers.delete(pending.timer);
    }
    armBoundary(worker, at);
  };

  const disarmAll = (worker: ActiveWorker) => {
    clearAll(worker.timers);
    boundaryTimers.delete(worker);
    boundaries.delete(worker);
  };

  return {
    onReady(worker) {
      disarmAll(worker);
      // The worker loads its workflow after ready: the first boundary has the same deadline.
      awaitBoundary(worker, ctx.options.workerStartupMs, "startupTimedOut", "loading the workflow");
    },
    onAttemptStarted(worker) {
      boundaries.delete(worker);
      const attempt = worker.openAttempt;
      if (attempt === null || attempt.deadlineAt === null) return;
      const delay = attempt.deadlineAt + ctx.options.killGraceMs - ctx.clock.now();
      attemptDeadlines.set(
        worker,
        later(worker.timers, delay, () => enforceDeadline(ctx, deps, worker, attempt.attemptId)),
      );
    },
    onAttemptClosed(worker) {
      clearTimer(worker, attemptDeadlines);
      deps.crashes.reset(worker.runId);
      if (isSettled(worker)) return awaitLeaving(ctx, deps, worker);
      awaitBoundary(
        worker,
        ctx.options.boundaryMs,
        "boundaryTimedOut",
        "workflow code between attempts",
      );
    },
    onSupervised(worker) {
      if (isSettled(worker)) awaitLeaving(ctx, deps, worker);
    },
    clearAttemptDeadline(worker) {
      clearTimer(worker, attemptDeadlines);
    },
    forget(worker) {
      disarmAll(worker);
      attemptDeadlines.delete(worker);
    },
  };
}

function clearTimer(worker: ActiveWorker, timers: Map<ActiveWorker, Timer>): void {
  const timer = timers.get(worker);
  if (timer === undefined) return;
  clearTimeout(timer);
  worker.timers.delete(timer);
  timers.delete(worker);
}

/**
 * The run settled: its worker cleans up, says goodbye and exits, or is kept as a prepared
 * process. One still there after the leave deadline (LEAVE_MS) is stopped like any other (TERM,
 * KILL of its group after the grace); the epoch stays `exited`.
 */
function awaitLeaving(ctx: HostContext, deps: DeadlineDeps, worker: ActiveWorker): void {
  const ms = deps.leaveMs;
  later(worker.timers, ms, () => {
    if (!awaitsGoodbye(worker)) return; // kept, gone, or already stopping
    ctx.log("worker.leave_deadline", { run: worker.runId, generation: worker.generation });
    deps.stop(
      worker,
      "boundaryTimedOut",
      `workerTimedOut: did not exit ${ms} ms after its run settled`,
    );
  });
}

/** The attempt's deadline (plus the kill grace) passed: commit its time-out, then stop. */
function enforceDeadline(
  ctx: HostContext,
  deps: DeadlineDeps,
  worker: ActiveWorker,
  attemptId: string,
): void {
  if (worker.openAttempt?.attemptId !== attemptId || stopReasonOf(worker) !== null) return;
  let reason: StopReason = "timedOut";
  try {
    // Commit first, then stop: a late message from the worker now meets a released claim.
    timeOutAttempt(ctx.store, worker.claim, { attemptId });
    crashPoint("host.deadline.afterCommit");
    worker.openAttempt = null;
    deps.crashes.reset(worker.runId);
  } catch (error) {
    if (!(error instanceof ClaimLostError)) {
      // The attempt closed in between (its outcome committed): nothing to enforce.
      ctx.log("worker.deadline_skipped", { run: worker.runId, error: logError(error) });
      return;
    }
    reason = "claimLost";
  }
  releaseClaim(worker);
  ctx.log("worker.deadline", { run: worker.runId, generation: worker.generation });
  deps.stop(worker, reason, "workerTimedOut: node deadline passed");
}

/**
 * An accepted submission validated in the run's prepared process goes on in that process at
 * once: the verdict, the next epoch's launch claim (a new generation, the epoch recorded with
 * the process named) and its `worker.live` share ONE group commit, each its own savepoint, where
 * they were three commits and a scheduler turn apart. Nothing leaves before that COMMIT: the
 * verdict's reply first, then the launch envelope. The scheduler's own rules decide (room for a
 * worker, the run among the next due runs, an interactive run, its process adopted); otherwise
 * only the verdict commits and the scheduler launches the run as before.
 *
 * A crash before the COMMIT leaves the submission `validating` (the next host validates it
 * again), or, when it was held (held-submission.ts), leaves nothing of it (the resent call
 * validates it again); after it, the run is running with a live epoch whose process the next host reaps by its
 * exact identity, and a new worker goes on from the accepted boundary: nothing runs twice.
 *
 * When the process also proposed that epoch's first step ahead (`ahead`: the next model step's
 * start and request, speculative-start.ts), they join the same COMMIT when their facts are still
 * current: the run is then waiting on the next request once it commits (after a crash there the
 * next host reaps the process and the request waits for its session, presented once).
 */
import { crashPoint } from "../../base/crash-point.ts";
import { groupTransaction } from "../../state/transactions.ts";
import { nextLaunchableRuns } from "../../state/transitions/run-launch.ts";
import { logError } from "../host-log.ts";
import type { ActiveWorker } from "../supervision/active-worker.ts";
import type { HostContext } from "../host-context.ts";
import { launchWorker } from "../supervision/launch-worker.ts";
import type { PreparedChild } from "../supervision/prepared-children.ts";
import { type LaunchDeps, stopTaken } from "./run-launches.ts";
import {
  type AheadStart,
  applyAheadStart,
  factsStillCurrent,
} from "../worker-messages/speculative-start.ts";

/**
 * Commits `accept` (the verdict; false when stale) and, in the same COMMIT, the run's next epoch
 * in `child` when the scheduler would launch it now. Returns the start of that epoch's
 * supervision (the caller runs it once it stopped reading the child's channel), or null when
 * only the verdict committed: `child` is then idle again and the scheduler was woken.
 */
export function launchAccepted(
  ctx: HostContext,
  deps: LaunchDeps,
  runId: string,
  child: PreparedChild,
  accept: () => boolean,
  ahead?: AheadStart,
): (() => void) | null {
  let worker: ActiveWorker | null = null;
  let taken: PreparedChild | null = null;
  let launchError: unknown = null;
  try {
    groupTransaction(ctx.store, () => {
      const current = ahead !== undefined && factsStillCurrent(ctx, runId, ahead);
      if (!accept()) return;
      const capacity = ctx.options.maxConcurrentWorkers - deps.active.size;
      if (capacity <= 0 || deps.active.has(runId)) return;
      const run = nextLaunchableRuns(ctx.store, capacity + deps.active.size)
        .filter((r) => !deps.active.has(r.runId))
        .slice(0, capacity)
        .find((r) => r.runId === runId);
      if (run?.executionMode !== "interactive") return;
      deps.prepared.release(child, true);
      taken = deps.prepared.take(runId);
      if (taken === null) return;
      try {
        worker = launchWorker(ctx, run, {
          ...deps.hooks(run),
          credentials: deps.credentials.forLaunch(runId),
          prepared: taken.spawned,
          live: true,
          ...(ahead ? { workerEpoch: ahead.workerEpoch } : {}),
        });
      } catch (error) {
        // The claim's savepoint rolled back; the verdict still commits.
        launchError = error;
      }
      if (worker !== null && ahead) {
        if (current) applyAheadStart(ctx, worker, ahead);
        else ctx.log("speculation.stale", { run: runId });
      }
      crashPoint("host.acceptedLaunch.beforeCommit");
    });
  } catch (error) {
    // The COMMIT failed: neither the verdict nor the claim is durable.
    if (taken) stopTaken(ctx, taken);
    throw error;
  }
  crashPoint("host.acceptedLaunch.afterCommit");
  if (worker === null) {
    if (taken) {
      stopTaken(ctx, taken);
      ctx.log("worker.launch_failed", { run: runId, error: logError(launchError) });
    } else deps.prepared.release(child, true);
    deps.schedule();
    return null;
  }
  const launched: ActiveWorker = worker;
  return () => deps.supervise(launched);
}

/**
 * The run workers' part of a host shutdown. A planned stop avoids ambiguity where it can: an
 * external node in flight gets a bounded wait to reach its boundary (its next `node.started`
 * parks the run instead of starting: `parkedAtBoundary`). Claims keep being renewed meanwhile;
 * then every run still live is parked at its last durable boundary (pure work can run again)
 * and its worker stopped.
 */
import { waitUntil } from "../../os/stop-group.ts";
import { parkRun } from "../../state/transitions/run-park.ts";
import { logError } from "../host-log.ts";
import type { ActiveWorker, StopReason } from "../supervision/active-worker.ts";
import type { HostContext } from "../host-context.ts";
import { holdsClaim, releaseClaim, stopReasonOf } from "../supervision/worker-life.ts";

type Stop = (worker: ActiveWorker, reason: StopReason, diagnostic: string) => void;

/** Parks the worker's run for the shutdown; its claim is released with the commit. */
function parkForShutdown(ctx: HostContext, worker: ActiveWorker): void {
  try {
    parkRun(ctx.store, worker.claim, { reason: "hostShutdown" });
  } catch (error) {
    // Lost or already settled: recovery of the next host handles whatever is left.
    ctx.log("worker.park_failed", { run: worker.runId, error: logError(error) });
  }
  releaseClaim(worker);
}

/** The worker proposes a node start while the host stops: its run parks there (true). */
export function parkAtBoundary(ctx: HostContext, worker: ActiveWorker, stop: Stop): true {
  parkForShutdown(ctx, worker);
  stop(worker, "shutdown", "host shutdown at a boundary");
  return true;
}

/** Waits, at most `stopWaitMs`, until no worker runs an external node. */
export async function waitForExternalBoundaries(
  ctx: HostContext,
  active: ReadonlyMap<string, ActiveWorker>,
): Promise<void> {
  const waitUntilMs = Date.now() + ctx.options.stopWaitMs;
  await Promise.all(
    [...active.values()].map((worker) =>
      waitUntil(
        () =>
          !holdsClaim(worker) || active.get(worker.runId) !== worker ||
          worker.openAttempt?.effect !== "external",
        Math.max(0, waitUntilMs - Date.now()),
      )
    ),
  );
}

/** Parks every run still live, stops every worker and waits until each epoch is handled. */
export async function parkAndStopAll(
  ctx: HostContext,
  active: ReadonlyMap<string, ActiveWorker>,
  stop: Stop,
): Promise<void> {
  for (const worker of active.values()) {
    if (holdsClaim(worker) && stopReasonOf(worker) === null) {
      parkForShutdown(ctx, worker);
    }
    stop(worker, "shutdown", "host shutdown");
  }
  await Promise.all([...active.values()].map((worker) => worker.done));
}

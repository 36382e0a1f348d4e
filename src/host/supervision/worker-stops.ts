/**
 * Stopping a run worker: the first reason and diagnostic win and its group is stopped once
 * (SIGTERM, SIGKILL after the kill grace; a worker not identified yet once it is). The stop is
 * held by its life's `stopping` phase, and the epoch's end waits for it (groupStopped).
 */
import type { HostContext } from "../host-context.ts";
import { logError } from "../host-log.ts";
import type { ActiveWorker, StopReason } from "./active-worker.ts";
import { stopChildGroup } from "./children/retire-child.ts";
import { beginStop } from "./worker-life.ts";

/** Stops the worker's group for `reason` (idempotent); the exit handler does the rest. */
export function stopWorker(
  ctx: HostContext,
  worker: ActiveWorker,
  reason: StopReason,
  diagnostic: string,
): void {
  const first = beginStop(worker, reason, async () => {
    try {
      const result = await stopChildGroup(worker.spawned, { graceMs: ctx.options.killGraceMs });
      if (result === "stuck") ctx.log("worker.stop_stuck", { run: worker.runId });
    } catch (error) {
      // The epoch's end waits for this stop: a failed one must not hold the worker's slot.
      ctx.log("worker.stop_failed", { run: worker.runId, error: logError(error) });
    }
  });
  if (first) worker.diagnostic ??= diagnostic;
}

/**
 * Stopping run workers: the first reason and diagnostic win, the group is stopped once (SIGTERM,
 * SIGKILL after the kill grace; a worker not identified yet is stopped once it is), and the
 * epoch's end waits for that stop to finish.
 */
import type { HostContext } from "../host-context.ts";
import type { ActiveWorker, StopReason } from "./active-worker.ts";
import { stopChildGroup } from "./children/retire-child.ts";
import { beginStop } from "./worker-life.ts";

export interface WorkerStops {
  /** Stops the worker's group for `reason` (idempotent); the exit handler does the rest. */
  stop(worker: ActiveWorker, reason: StopReason, diagnostic: string): void;
  /** Resolves once a stop of `worker` (if one began) finished, and forgets it. */
  finished(worker: ActiveWorker): Promise<void>;
}

export function createWorkerStops(ctx: HostContext): WorkerStops {
  const stopping = new Map<ActiveWorker, Promise<void>>();
  return {
    stop(worker, reason, diagnostic) {
      if (beginStop(worker, reason)) worker.diagnostic ??= diagnostic;
      if (stopping.has(worker)) return;
      const done = stopChildGroup(worker.spawned, { graceMs: ctx.options.killGraceMs }).then(
        (result) => {
          if (result === "stuck") ctx.log("worker.stop_stuck", { run: worker.runId });
        },
      );
      stopping.set(worker, done);
    },
    async finished(worker) {
      await stopping.get(worker);
      stopping.delete(worker);
    },
  };
}

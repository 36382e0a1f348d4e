/**
 * The host's captured worker output (`<stateDir>/workers/<epoch>.out|err`, written by
 * children/captured-output.ts) over the life of the supervision: the budget of files and bytes
 * kept across epochs and host restarts.
 */
import { join } from "node:path";
import type { ActiveWorker } from "./active-worker.ts";
import type { HostContext } from "../host-context.ts";
import { pruneWorkerLogs } from "./children/captured-output.ts";

/** Captured output files kept across host restarts (newest first). */
const KEPT_WORKER_LOGS = 200;

/** The output files children still write: never pruned. */
export interface LiveLogs {
  workers: ReadonlyMap<string, ActiveWorker>;
  resolvers(): Iterable<string>;
  prepared(): Iterable<string>;
}

/**
 * Returns `prune(exited?)`, which keeps the captured output within its file count and byte
 * budget; `exited`'s files no longer count as live.
 */
export function createLogPruner(ctx: HostContext, live: LiveLogs) {
  return (exited?: ActiveWorker): void => {
    const inUse = new Set([...live.resolvers(), ...live.prepared()]);
    for (const worker of live.workers.values()) {
      if (worker === exited) continue;
      inUse.add(worker.spawned.logFiles.stdout).add(worker.spawned.logFiles.stderr);
    }
    pruneWorkerLogs(join(ctx.stateDir, "workers"), {
      keep: KEPT_WORKER_LOGS,
      maxBytes: ctx.options.maxWorkerLogsMb * 1024 * 1024,
      inUse,
    });
  };
}

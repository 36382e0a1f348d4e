/**
 * The host's captured worker output (`<stateDir>/workers/<epoch>.out|err`, written by
 * children/captured-output.ts) over the life of the supervision: what is left of an epoch once its
 * worker is gone, and the budget of files and bytes kept across epochs and host restarts.
 */
import { join } from "node:path";
import type { ActiveWorker } from "./active-worker.ts";
import type { HostContext } from "./api.ts";
import { pruneWorkerLogs, removeEmptyLogs } from "./children/captured-output.ts";
import { closeAfterDrain } from "./children/retire-child.ts";

/** Captured output files kept across host restarts (newest first). */
const KEPT_WORKER_LOGS = 200;
/** How long a dead worker's channel may still deliver frames already written. */
const CHANNEL_DRAIN_MS = 1_000;

/**
 * After the worker exited: lets its channel deliver the frames already written, then closes it
 * and removes its output files if they stayed empty. A descendant that inherited nothing can
 * still hold the pipe open in odd cases, hence the bounded wait. (Not for a process the host
 * keeps as the run's prepared child: it lives on.)
 */
export async function settleWorkerOutput(worker: ActiveWorker): Promise<void> {
  await worker.spawned.exited;
  setTimeout(() => worker.spawned.channel.destroy(), CHANNEL_DRAIN_MS).unref();
  await closeAfterDrain(worker.spawned, CHANNEL_DRAIN_MS);
  removeEmptyLogs(worker.spawned.logFiles);
}

/** The output files children still write: never pruned. */
export interface LiveLogs {
  workers: ReadonlyMap<string, ActiveWorker>;
  resolvers: ReadonlySet<string>;
  prepared(): Iterable<string>;
}

/**
 * Returns `prune(exited?)`, which keeps the captured output within its file count and byte
 * budget; `exited`'s files no longer count as live.
 */
export function createLogPruner(ctx: HostContext, live: LiveLogs) {
  return (exited?: ActiveWorker): void => {
    const inUse = new Set([...live.resolvers, ...live.prepared()]);
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

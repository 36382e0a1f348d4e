/**
 * What a worker's epoch leaves behind once its channel ended: its process group (unless the
 * process is kept as the run's prepared child), the registry entry, and every child group it
 * registered (a headless Pi and its tools). Nothing of the epoch may outlive it.
 */
import { stopProcessGroup, stopProcessTree } from "../../os/stop-group.ts";
import { clearChildGroups } from "../../state/transitions/child-groups.ts";
import { logError } from "../host-log.ts";
import type { ActiveWorker } from "./active-worker.ts";
import type { HostContext } from "./api.ts";
import type { ProcessRegistry } from "./process-registry.ts";
import { isKept } from "./worker-life.ts";

export async function reapWorkerProcesses(
  ctx: HostContext,
  registry: ProcessRegistry,
  worker: ActiveWorker,
): Promise<void> {
  const identity = worker.identity;
  if (identity) {
    if (!isKept(worker)) await stopProcessGroup(identity, { graceMs: ctx.options.killGraceMs });
    registry.unregister(identity);
  }
  await Promise.all(
    [...worker.children.values()].map((child) =>
      stopProcessTree(child, { graceMs: ctx.options.killGraceMs })
    ),
  );
  if (worker.children.size === 0) return;
  worker.children.clear();
  try {
    clearChildGroups(ctx.store, worker.workerEpoch);
  } catch (error) {
    // A busy database: the records stay for the next host's recovery (exact identities).
    ctx.log("worker.children_clear_failed", { run: worker.runId, error: logError(error) });
  }
}

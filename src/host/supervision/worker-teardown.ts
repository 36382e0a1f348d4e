/**
 * What a worker's epoch leaves behind once its channel ended, retired by the kit in its one
 * order (retire-child.ts): its process group and registry entry (unless the process is kept as
 * the run's prepared child), every child group it registered (a headless Pi and its tools),
 * then its output drained and empty files removed. Nothing of the epoch may outlive it.
 */
import { stopProcessTree } from "../../os/stop-group.ts";
import { clearChildGroups } from "../../state/transitions/child-groups.ts";
import { logError } from "../host-log.ts";
import type { ActiveWorker } from "./active-worker.ts";
import type { HostContext } from "../host-context.ts";
import { retireChild } from "./children/retire-child.ts";
import { isKept } from "./worker-life.ts";

export async function retireWorker(ctx: HostContext, worker: ActiveWorker): Promise<void> {
  const reap = () => reapChildGroups(ctx, worker);
  // Kept, it is not retired: the prepared pool owns it, registry entry and all.
  if (!isKept(worker)) await retireChild(worker.spawned, ctx.options.killGraceMs, reap);
  // A worker that was never identified has no group to stop, but may have registered some.
  await reapChildGroups(ctx, worker);
}

async function reapChildGroups(ctx: HostContext, worker: ActiveWorker): Promise<void> {
  const { children } = worker;
  if (children.size === 0) return;
  const graceMs = ctx.options.killGraceMs;
  await Promise.all([...children.values()].map((child) => stopProcessTree(child, { graceMs })));
  children.clear();
  try {
    clearChildGroups(ctx.store, worker.workerEpoch);
  } catch (error) {
    // A busy database: the records stay for the next host's recovery (exact identities).
    ctx.log("worker.children_clear_failed", { run: worker.runId, error: logError(error) });
  }
}

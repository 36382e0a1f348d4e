/**
 * One worker epoch under supervision, from launch to its recorded end: the start-up deadline, the
 * start identity recorded and registered before the channel is read, the session, then the end
 * in one order: deadlines forgotten; the process retired in the kit's one order (retire-child.ts:
 * its group and registry entry, unless it is kept as the run's prepared child), with every child
 * group it registered (a headless Pi and its tools) and its output settled; the stop awaited;
 * the epoch recorded and the run settled; a kept process handed to the prepared pool. Nothing of
 * the epoch outlives it.
 */
import { logError } from "../host-log.ts";
import { pruneLogs } from "../worker-log-budget.ts";
import type { ActiveWorker } from "./active-worker.ts";
import type { HostContext } from "../host-context.ts";
import type { PreparedChildren } from "./prepared-children.ts";
import type { ChildExit } from "./children/spawn-child.ts";
import { serveWorkerChannel, type SessionHooks } from "./worker-session.ts";
import { retireChild } from "./children/retire-child.ts";
import { stopProcessTree } from "../../os/stop-group.ts";
import { unregisterChildGroup } from "../../state/transitions/child-groups.ts";
import { groupStopped, isKept, isLaunching, markGone } from "./worker-life.ts";
import { armStartupDeadline } from "./children/child-deadline.ts";

/** The epoch record of a process kept as its run's prepared child: a normal end. */
const KEPT_EXIT = { code: 0, signal: null };

export interface EpochDeps {
  active: Map<string, ActiveWorker>;
  hooks: SessionHooks;
  prepared: PreparedChildren;
  /** The epoch's run deadlines are off (src/host/runs/worker-deadlines.ts). */
  forgetDeadlines(worker: ActiveWorker): void;
  /** Records the epoch's outcome and settles its run (src/host/runs/worker-exit.ts). */
  settleExit(worker: ActiveWorker, exit: ChildExit): void;
  /** The epoch is recorded and the worker no longer active. */
  ended(): void;
}

export function superviseWorker(ctx: HostContext, deps: EpochDeps, worker: ActiveWorker): void {
  deps.active.set(worker.runId, worker);
  armStartupDeadline(worker.spawned, worker.life, ctx.options.workerStartupMs, () => {
    const why = "workerTimedOut: no worker.ready before the deadline";
    if (isLaunching(worker)) deps.hooks.stop(worker, "startupTimedOut", why);
  });
  const served = worker.named.then(() => serveWorkerChannel(ctx, worker, deps.hooks));
  worker.done = served.then(() => endEpoch(ctx, deps, worker));
}

async function endEpoch(ctx: HostContext, deps: EpochDeps, worker: ActiveWorker): Promise<void> {
  // A kept process ended its epoch without exiting: the epoch is recorded as a normal exit.
  const exit = isKept(worker) ? KEPT_EXIT : await worker.spawned.exited;
  deps.forgetDeadlines(worker);
  // Kept, it is not retired: the prepared pool owns it, registry entry and all.
  const reap = () => reapChildGroups(ctx, worker);
  if (!isKept(worker)) await retireChild(worker.spawned, ctx.options.killGraceMs, reap);
  // A worker that was never identified has no group to stop, but may have registered some.
  await reap();
  await groupStopped(worker);
  // Its output is settled: the budget may count it (the other live workers' files it keeps).
  pruneLogs(ctx, [...deps.active.values()].filter((other) => other !== worker));
  try {
    deps.settleExit(worker, exit);
  } catch (error) {
    // Never leave the worker counted as active; the expired-claim sweep settles the run.
    ctx.log("worker.exit_failed", { run: worker.runId, error: logError(error) });
  }
  if (isKept(worker)) deps.prepared.adopt(worker);
  markGone(worker);
  deps.active.delete(worker.runId);
  deps.ended();
}

async function reapChildGroups(ctx: HostContext, worker: ActiveWorker): Promise<void> {
  const { children, workerEpoch } = worker;
  const graceMs = ctx.options.killGraceMs;
  await Promise.all([...children.values()].map(async ({ pid, startTime }) => {
    // Alive after SIGKILL: its row stays for the next host's recovery (exact identity).
    if (await stopProcessTree({ pid, startTime }, { graceMs }) === "stuck") return;
    try {
      unregisterChildGroup(ctx.store, { workerEpoch, pid, startTime });
    } catch (error) {
      // A busy database: the record stays for the next host's recovery (exact identities).
      ctx.log("worker.children_clear_failed", { run: worker.runId, error: logError(error) });
    }
  }));
  children.clear();
}

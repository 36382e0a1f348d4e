/**
 * Host start-up recovery of processes, the spec's step 2 (step 1, the host epoch, is taken by the
 * host main before it calls `recover()`): reap worker epochs left active by an earlier host:
 * signal a group only when its leader's exact start identity still runs (a reused PID is never
 * signalled); record `orphaned`; likewise the child groups their workers registered (a shell
 * command, a headless Pi), from their durable records (`worker_child_groups`), and the
 * validation and resolver children it left (`host_children`).
 *
 * The runs those workers held (steps 3-6) are recovered next by src/host/runs/run-recovery.ts,
 * the controllers' reconciles by src/host/controllers/recovery.ts; steps 7-10 are in
 * host-supervision.ts's `recover()` and `start()`.
 */
import { TransitionError } from "../../state/errors.ts";
import { listActiveWorkers } from "../../state/queries.ts";
import { finishWorkerEpoch } from "../../state/transitions/workers.ts";
import type { HostContext } from "../host-context.ts";
import { reapRecordedChildGroups, reapRecordedHostChildren } from "./child-groups.ts";
import { isSameProcessAlive, parseStartIdentity } from "../../os/process-identity.ts";
import { stopProcessGroup } from "../../os/stop-group.ts";

/** Step 2 for run workers and every child a host records. */
export async function recoverAtStart(ctx: HostContext): Promise<void> {
  await reapStaleWorkers(ctx);
  const groups = await reapRecordedChildGroups(ctx.store, ctx.options.killGraceMs);
  if (groups > 0) ctx.log("recovery.reaped_children", { count: groups });
  const children = await reapRecordedHostChildren(ctx.store, ctx.options.killGraceMs);
  if (children > 0) ctx.log("recovery.reaped_host_children", { count: children });
}

/** Step 2. Returns how many stale groups were signalled. */
export function reapStaleWorkers(ctx: HostContext): Promise<number> {
  return reapOrphanedEpochs(ctx, listActiveWorkers(ctx.store), "recovery.reaped", (epoch) => {
    try {
      finishWorkerEpoch(ctx.store, {
        workerEpoch: epoch.workerEpoch,
        status: "orphaned",
        exitCode: null,
        signal: null,
        diagnosticHash: null,
      });
    } catch (error) {
      if (!(error instanceof TransitionError)) throw error; // finished in between
    }
  });
}

/**
 * Step 2 for any kind of worker epoch (run or controller worker): each epoch an earlier host
 * left active has its group stopped while its leader runs with the exact recorded identity (a
 * reused PID is never signalled), then `finish` records it orphaned. Returns how many groups
 * were signalled (logged as `event`).
 */
export async function reapOrphanedEpochs<E extends { startIdentity: string | null }>(
  ctx: HostContext,
  epochs: readonly E[],
  event: string,
  finish: (epoch: E) => void,
): Promise<number> {
  let reaped = 0;
  for (const epoch of epochs) {
    const identity = parseStartIdentity(epoch.startIdentity);
    if (identity !== null && (await isSameProcessAlive(identity))) {
      await stopProcessGroup(identity, { graceMs: ctx.options.killGraceMs });
      reaped++;
    }
    finish(epoch);
  }
  if (reaped > 0) ctx.log(event, { count: reaped });
  return reaped;
}

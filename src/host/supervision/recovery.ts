/**
 * Host start-up recovery, the spec's steps in order (step 1, the host epoch, is taken by the host
 * main before it calls `recover()`):
 *
 *   2. reap worker epochs left active by an earlier host: signal a group only when its leader's
 *      exact start identity still runs (a reused PID is never signalled); record `orphaned`;
 *      likewise the child groups their workers registered (a shell command, a headless Pi), from
 *      their durable records (`worker_child_groups`), and the validation and resolver children
 *      it left (`host_children`);
 *   3. find running runs whose claim is absent or expired, and their active attempts;
 *   4-6. per run, one control-claimed transition (`recoverExpiredRun`) reads the attempt's effect
 *      state: a pure attempt is interrupted and the run made claimable again; an external one
 *      (action, shell) has an uncertain outcome: its effects become ambiguous and the run is
 *      blocked `effectAmbiguous` for an operator to resume or cancel;
 *   7-10. pending interactive requests need nothing here (they are rows; no worker waits with
 *      them); the host main applies due deadlines before commands arrive (step 8, the deadline
 *      timer), `start()` re-runs leftover `validating` submissions (step 9), and no model turn
 *      starts until a session asks (step 10). Controllers recover in their own supervision.
 *
 * Runs whose old claim has not expired yet are picked up by the same sweep later (the renewal
 * timer calls `recoverExpiredRuns`). Claim loss is a handoff: nothing here writes a failure.
 */
import { ClaimLostError, TransitionError } from "../../state/errors.ts";
import { listActiveWorkers, listExpiredRuns } from "../../state/queries.ts";
import { recoverExpiredRun } from "../../state/transitions/run-recovery.ts";
import { finishWorkerEpoch } from "../../state/transitions/workers.ts";
import type { HostContext } from "./api.ts";
import { reapRecordedChildGroups, reapRecordedHostChildren } from "./child-groups.ts";
import { isSameProcessAlive, parseStartIdentity } from "../../os/process-identity.ts";
import { stopProcessGroup } from "../../os/stop-group.ts";

export async function recoverAtStart(ctx: HostContext): Promise<void> {
  await reapStaleWorkers(ctx);
  const groups = await reapRecordedChildGroups(ctx.store, ctx.options.killGraceMs);
  if (groups > 0) ctx.log("recovery.reaped_children", { count: groups });
  const children = await reapRecordedHostChildren(ctx.store, ctx.options.killGraceMs);
  if (children > 0) ctx.log("recovery.reaped_host_children", { count: children });
  recoverExpiredRuns(ctx, new Set());
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

/** Steps 3-6 for every expired running run not in `skip`. Returns how many were recovered. */
export function recoverExpiredRuns(ctx: HostContext, skip: ReadonlySet<string>): number {
  return recoverExpiredClaims(ctx, listExpiredRuns(ctx.store, ctx.clock.now()), {
    skip,
    event: "recovery.runs",
    recover: (runId, claim) => recoverExpiredRun(ctx.store, { runId, ...claim }),
    // Another owner renewed or took it in between: not ours to recover.
    handedOff: (error) => error instanceof ClaimLostError || error instanceof TransitionError,
  });
}

/**
 * Takes over every expired claim in `ids` (a run's, a reconcile's) not in `skip` with a fresh
 * claim of this host, through the kind's `recover` transition; an error `handedOff` accepts
 * means another owner was first. Returns how many were recovered (logged as `event`).
 */
export function recoverExpiredClaims(
  ctx: HostContext,
  ids: readonly string[],
  kind: {
    skip: ReadonlySet<string>;
    event: string;
    recover(id: string, claim: { ownerId: string; token: string; ttlMs: number }): void;
    handedOff(error: unknown): boolean;
  },
): number {
  let recovered = 0;
  for (const id of ids) {
    if (kind.skip.has(id)) continue;
    try {
      kind.recover(id, {
        ownerId: ctx.hostOwnerId,
        token: ctx.ids.token(),
        ttlMs: ctx.options.claimTtlMs,
      });
      recovered++;
    } catch (error) {
      if (!kind.handedOff(error)) throw error;
    }
  }
  if (recovered > 0) ctx.log(kind.event, { count: recovered });
  return recovered;
}

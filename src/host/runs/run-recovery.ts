/**
 * Recovery of runs whose claim expired (the spec's recovery steps 3-6), at start-up once the
 * stale workers are reaped (supervision/recovery.ts) and on every claim-renewal tick after:
 *
 *   3. find running runs whose claim is absent or expired, and their active attempts;
 *   4-6. per run, one control-claimed transition (`recoverExpiredRun`) reads the attempt's effect
 *      state: a pure attempt is interrupted and the run made claimable again; an external one
 *      (action, shell) has an uncertain outcome: its effects become ambiguous and the run is
 *      blocked `effectAmbiguous` for an operator to resume or cancel.
 *
 * Runs whose old claim has not expired yet are picked up by the same sweep later. Claim loss is a
 * handoff: nothing here writes a failure.
 */
import { ClaimLostError, TransitionError } from "../../state/errors.ts";
import { listExpiredRuns } from "../../state/queries.ts";
import { recoverExpiredRun } from "../../state/transitions/run-recovery.ts";
import type { HostContext } from "../host-context.ts";
import { recoverExpiredClaims } from "../expired-claims.ts";

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

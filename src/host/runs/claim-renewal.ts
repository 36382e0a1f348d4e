/**
 * Claim renewal, every `claimRenewMs`: each live worker's claim is extended in its own short
 * transaction; a claim found lost (another host epoch took the run) stops that worker at once.
 * The same tick sweeps expired claims no worker of ours holds, so recovery relaunches their runs.
 */
import { renewClaim } from "../../state/claims.ts";
import { ClaimLostError } from "../../state/errors.ts";
import type { HostContext } from "../host-context.ts";
import type { ActiveWorker, StopReason } from "../supervision/active-worker.ts";
import { recoverExpiredRuns } from "./run-recovery.ts";
import { logError } from "../host-log.ts";
import { holdsClaim, releaseClaim, stopReasonOf } from "../supervision/worker-life.ts";

export function renewClaims(
  ctx: HostContext,
  active: ReadonlyMap<string, ActiveWorker>,
  deps: {
    stop(worker: ActiveWorker, reason: StopReason, diagnostic: string): void;
    shuttingDown(): boolean;
    schedule(): void;
  },
): void {
  for (const worker of active.values()) {
    if (!holdsClaim(worker) || stopReasonOf(worker) !== null) continue;
    try {
      renewClaim(ctx.store, worker.claim);
    } catch (error) {
      if (!(error instanceof ClaimLostError)) {
        // e.g. a busy database: the next tick retries well before the claim expires.
        ctx.log("worker.renew_failed", { run: worker.runId, error: logError(error) });
        continue;
      }
      releaseClaim(worker);
      deps.stop(worker, "claimLost", `claimLost: ${error.reason}`);
    }
  }
  if (deps.shuttingDown()) return;
  try {
    if (recoverExpiredRuns(ctx, new Set(active.keys())) > 0) deps.schedule();
  } catch (error) {
    ctx.log("recovery.sweep_failed", { error: logError(error) });
  }
}

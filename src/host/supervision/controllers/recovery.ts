/**
 * Controller recovery (spec recovery step 7, "scheduled controller work"): at start-up, reap
 * controller workers an earlier host left `starting` or `live` (only an exact PID and start
 * identity match is signalled) and record them `orphaned`; then, at start-up and on every tick,
 * recover reconcile claims that expired without an end (the owner died): their applying effects
 * return to pending and the resource is due again.
 */
import {
  finishControllerWorker,
  listActiveControllerWorkers,
} from "../../../state/controllers/controller-workers.ts";
import {
  listExpiredReconciles,
  recoverExpiredReconcile,
} from "../../../state/controllers/reconcile-claims.ts";
import { ClaimLostError } from "../../../state/errors.ts";
import type { HostContext } from "../api.ts";
import { isSameProcessAlive, parseStartIdentity } from "../../../os/process-identity.ts";
import { stopProcessGroup } from "../../../os/stop-group.ts";

export async function recoverControllers(ctx: HostContext): Promise<void> {
  let reaped = 0;
  for (const epoch of listActiveControllerWorkers(ctx.store)) {
    const identity = parseStartIdentity(epoch.startIdentity);
    if (identity !== null && (await isSameProcessAlive(identity))) {
      await stopProcessGroup(identity, { graceMs: ctx.options.killGraceMs });
      reaped++;
    }
    finishControllerWorker(ctx.store, {
      workerEpoch: epoch.workerEpoch,
      status: "orphaned",
      exitCode: null,
      signal: null,
    });
  }
  if (reaped > 0) ctx.log("recovery.controller_workers", { count: reaped });
  recoverExpiredReconciles(ctx, new Set());
}

/** Recovers every expired reconcile claim not held by this host. Returns how many. */
export function recoverExpiredReconciles(ctx: HostContext, held: ReadonlySet<string>): number {
  let recovered = 0;
  for (const uid of listExpiredReconciles(ctx.store, ctx.clock.now())) {
    if (held.has(uid)) continue;
    try {
      recoverExpiredReconcile(ctx.store, {
        uid,
        ownerId: ctx.hostOwnerId,
        token: ctx.ids.token(),
        ttlMs: ctx.options.claimTtlMs,
      });
      recovered++;
    } catch (error) {
      if (!(error instanceof ClaimLostError)) throw error; // renewed in between: not ours
    }
  }
  if (recovered > 0) ctx.log("recovery.reconciles", { count: recovered });
  return recovered;
}

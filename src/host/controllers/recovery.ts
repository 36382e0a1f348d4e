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
} from "../../state/controllers/controller-workers.ts";
import {
  listExpiredReconciles,
  recoverExpiredReconcile,
} from "../../state/controllers/reconcile-claims.ts";
import { ClaimLostError } from "../../state/errors.ts";
import type { HostContext } from "../host-context.ts";
import { reapOrphanedEpochs } from "../supervision/recovery.ts";
import { recoverExpiredClaims } from "../expired-claims.ts";

export async function recoverControllers(ctx: HostContext): Promise<void> {
  const epochs = listActiveControllerWorkers(ctx.store);
  await reapOrphanedEpochs(
    ctx,
    epochs,
    "recovery.controller_workers",
    (epoch) =>
      finishControllerWorker(ctx.store, {
        workerEpoch: epoch.workerEpoch,
        status: "orphaned",
        exitCode: null,
        signal: null,
      }),
  );
  recoverExpiredReconciles(ctx, new Set());
}

/** Recovers every expired reconcile claim not held by this host. Returns how many. */
export function recoverExpiredReconciles(ctx: HostContext, held: ReadonlySet<string>): number {
  return recoverExpiredClaims(ctx, listExpiredReconciles(ctx.store, ctx.clock.now()), {
    skip: held,
    event: "recovery.reconciles",
    recover: (uid, claim) => recoverExpiredReconcile(ctx.store, { uid, ...claim }),
    // Renewed in between: not ours.
    handedOff: (error) => error instanceof ClaimLostError,
  });
}

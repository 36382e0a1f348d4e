/**
 * A reply that cannot cross a run worker's channel. Replies are bounded by construction (facts
 * travel in pieces, stored values are at most the node output limit), so this is a safety net:
 * the run could never make progress through this channel, so it fails now with a clear reason
 * instead of crash-looping.
 */
import { MAX_FRAME_BYTES } from "../../protocol/framing.ts";
import { ClaimLostError } from "../../state/errors.ts";
import { failRun } from "../../state/transitions/run-end.ts";
import type { HostContext } from "../host-context.ts";
import type { ActiveWorker, StopReason } from "../supervision/active-worker.ts";
import { holdsClaim, markSettled, releaseClaim } from "../supervision/worker-life.ts";

export function failForReplyTooLarge(
  ctx: HostContext,
  worker: ActiveWorker,
  stop: (worker: ActiveWorker, reason: StopReason, diagnostic: string) => void,
): void {
  if (holdsClaim(worker)) {
    try {
      failRun(ctx.store, worker.claim, {
        error: {
          code: "protocolRejected",
          message: `A reply to the run's worker passed the ${MAX_FRAME_BYTES} byte channel ` +
            "message limit",
        },
      });
      markSettled(worker);
    } catch (error) {
      if (!(error instanceof ClaimLostError)) throw error;
      releaseClaim(worker);
    }
  }
  stop(worker, "protocolRejected", "protocolRejected: reply too large");
}

/**
 * The host's first act: taking the global host claim (the next epoch). A host that answers on
 * the socket is refused before the claim is touched (taking the next epoch and then giving up
 * would fence a live host and leave none), and so is a live holder of the claim.
 */
import {
  acquireHostClaim,
  type HostClaim,
  HostClaimHeldError,
  readHostEpoch,
} from "../state/host-claim.ts";
import { closeStateStore, type StateStore } from "../state/store.ts";
import type { IdSource } from "../base/clock.ts";
import { HostStartError } from "../protocol/host-ready.ts";
import { hostProcessProof } from "./host-identity.ts";
import type { HostLog } from "./host-log.ts";
import { probeSocket } from "./socket-listener.ts";

/** Takes the claim or closes the store and throws `HostStartError("alreadyRunning")`. */
export async function takeHostClaim(ctx: {
  store: StateStore;
  socketPath: string;
  ownerId: string;
  ids: IdSource;
  ttlMs: number;
  log: HostLog;
}): Promise<HostClaim> {
  const { store } = ctx;
  if ((await probeSocket(ctx.socketPath, 1000)) === "live") {
    const held = readHostEpoch(store);
    closeStateStore(store);
    throw new HostStartError(
      "alreadyRunning",
      `Host already running: host epoch ${held?.epoch ?? "?"} holds the state database and ` +
        "answers on the socket (see 'pi-workflows host status')",
    );
  }
  try {
    const { takeover, ...claim } = acquireHostClaim(store, {
      ownerId: ctx.ownerId,
      token: ctx.ids.token(),
      ttlMs: ctx.ttlMs,
      ...(await hostProcessProof()),
    });
    ctx.log("host.claimed", { epoch: claim.epoch, pid: process.pid, takeover });
    return claim;
  } catch (error) {
    closeStateStore(store);
    if (error instanceof HostClaimHeldError) {
      throw new HostStartError(
        "alreadyRunning",
        `Host already running: host epoch ${error.epoch} holds the state database (see 'pi-workflows host status')`,
      );
    }
    throw error;
  }
}

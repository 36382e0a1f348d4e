/**
 * Keeping the host claim: renewed from a timer that starts before recovery, so a long recovery
 * cannot let the lease lapse. A refused renewal (another host took the epoch) or a lease that
 * ran out means this host must stop accepting at once (`onLost`); a busy database is retried
 * until the lease would run out. A full disk fails every write, a takeover's too: the host keeps
 * its epoch and serves reads (writes answer diskFull); once space frees, its lapsed lease is
 * renewed if no host took it.
 */
import type { Clock } from "../base/clock.ts";
import { type HostClaim, renewHostClaim } from "../state/host-claim.ts";
import { ClaimLostError, isDiskFull } from "../state/errors.ts";
import type { StateStore } from "../state/store.ts";
import { type HostLog, oneLine } from "./host-log.ts";

export interface ClaimRenewal {
  /** The claim as last renewed. */
  readonly claim: HostClaim;
  /**
   * Checked before every command: a host that was stopped (SIGSTOP, a suspended laptop) past
   * its lease renews first and answers nothing if another host has taken the epoch meanwhile.
   */
  holdsEpoch(): boolean;
  /** Ends the renewals (the epoch is renewed until the shutdown's last wait). */
  stop(): void;
}

export function startClaimRenewal(ctx: {
  store: StateStore;
  clock: Clock;
  log: HostLog;
  claim: HostClaim;
  ttlMs: number;
  renewMs: number;
  /** False once the host is stopping: it holds the epoch for no new command. */
  running(): boolean;
  onLost(): void;
}): ClaimRenewal {
  let claim = ctx.claim;
  let diskFull = false;
  const renew = (): boolean => {
    try {
      claim = { ...claim, expiresAt: renewHostClaim(ctx.store, claim, ctx.ttlMs, diskFull) };
      if (diskFull) ctx.log("host.diskSpaceBack", { epoch: claim.epoch });
      diskFull = false;
      return true;
    } catch (error) {
      if (isDiskFull(error)) {
        if (!diskFull) ctx.log("host.diskFull", { epoch: claim.epoch });
        diskFull = true;
        return true;
      }
      const lost = error instanceof ClaimLostError || ctx.clock.now() >= claim.expiresAt;
      ctx.log(lost ? "host.claimLost" : "host.renewFailed", {
        epoch: claim.epoch,
        reason: (error as { reason?: string }).reason ?? oneLine(error),
      });
      if (lost) ctx.onLost();
      return !lost;
    }
  };
  const timer = setInterval(renew, ctx.renewMs);
  return {
    get claim() {
      return claim;
    },
    holdsEpoch: () => ctx.running() && (ctx.clock.now() < claim.expiresAt - ctx.renewMs || renew()),
    stop: () => clearInterval(timer),
  };
}

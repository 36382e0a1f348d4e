/**
 * For tools that write runs straight into a state file before any host runs (seeds, bench
 * generators): a host claim to launch runs under, released afterwards. Run claims are fenced by
 * the host epoch, so a real host started later (epoch + 1) treats every claim left here as dead.
 */
import { acquireHostClaim, releaseHostClaim } from "../../src/state/host-claim.ts";
import type { StateStore } from "../../src/state/store.ts";

export function withSeedHost<T>(store: StateStore, fn: (hostEpoch: number) => T): T {
  const host = acquireHostClaim(store, { ownerId: "seed-host", token: "seed", ttlMs: 600_000 });
  try {
    return fn(host.epoch);
  } finally {
    releaseHostClaim(store, host);
  }
}

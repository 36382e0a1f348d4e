/**
 * Control claims: how a command or recovery gets authority over a run whose worker claim is
 * expired, absent, or fenced by a newer host epoch. Taking one proves the old lease is gone
 * (generation + 1 fences the old owner); a live claim of another owner is never overridden.
 */
import {
  acquireClaimInTx,
  type Claim,
  currentHostEpochInTx,
  isExactLiveClaimInTx,
  leaseHolds,
  readLease,
  runResource,
} from "../claims.ts";
import { ClaimLostError } from "../errors.ts";
import type { StateStore } from "../store.ts";

/**
 * Makes sure the caller may change `runId` now. Returns `"none"` when no claim was held, `"own"`
 * when `own` (the caller's claim of this run) is exactly the live claim (owner, token hash,
 * generation and host epoch), `"control"` when an expired or fenced claim was replaced by a
 * control claim inside this transaction. The caller's transition releases the lease afterwards.
 * Throws `ClaimLostError(ownerChanged)` for any other live claim.
 */
export function takeAuthorityInTx(
  store: StateStore,
  runId: string,
  own: Claim | null,
  now: number,
): "none" | "own" | "control" {
  const lease = readLease(store, runResource(runId));
  if (!lease || !lease.token_hash) return "none";
  if (leaseHolds(lease, now, currentHostEpochInTx(store))) {
    if (own !== null && own.runId === runId && isExactLiveClaimInTx(store, own, now)) return "own";
    throw new ClaimLostError(runId, lease.generation, "ownerChanged");
  }
  acquireClaimInTx(store, {
    resource: runResource(runId),
    runId,
    ownerType: "control",
    ownerId: own?.ownerId ?? "control",
    token: store.ids.token(),
    ttlMs: 1,
  }, now);
  return "control";
}

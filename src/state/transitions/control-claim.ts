/**
 * Control claims: how a command or recovery gets authority over a run whose worker claim is
 * expired or absent. Taking one proves the old lease is gone (generation + 1 fences the old
 * owner); a live claim of another owner is never overridden.
 */
import { acquireClaimInTx, readLease, runResource } from "../claims.ts";
import { ClaimLostError } from "../errors.ts";
import type { StateStore } from "../store.ts";

/**
 * Makes sure the caller may change `runId` now. Returns `"none"` when no claim was held, `"own"`
 * when the caller (`ownerId`, a host) holds the live claim, `"control"` when an expired claim was
 * replaced by a control claim inside this transaction. The caller's transition releases the
 * lease afterwards. Throws `ClaimLostError(ownerChanged)` for another owner's live claim.
 */
export function takeAuthorityInTx(
  store: StateStore,
  runId: string,
  ownerId: string | null,
  now: number,
): "none" | "own" | "control" {
  const lease = readLease(store, runResource(runId));
  if (!lease || !lease.token_hash) return "none";
  if ((lease.expires_at ?? 0) > now) {
    if (ownerId !== null && lease.owner_type === "host" && lease.owner_id === ownerId) return "own";
    throw new ClaimLostError(runId, lease.generation, "ownerChanged");
  }
  acquireClaimInTx(store, {
    resource: runResource(runId),
    runId,
    ownerType: "control",
    ownerId: ownerId ?? "control",
    token: store.ids.token(),
    ttlMs: 1,
  }, now);
  return "control";
}

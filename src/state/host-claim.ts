/**
 * The global host claim: one row holding the host epoch. A host takes epoch + 1 only when no
 * live, unexpired claim exists, so two hosts never accept commands against the same database.
 */
import { ClaimLostError } from "./errors.ts";
import { hashToken } from "./claims.ts";
import { execute, queryOne, type StateStore, writeTransaction } from "./store.ts";

export interface HostClaim {
  readonly epoch: number;
  readonly ownerId: string;
  /** Raw token: memory only. */
  readonly token: string;
  readonly expiresAt: number;
}

interface HostClaimRow {
  epoch: number;
  owner_id: string | null;
  token_hash: string | null;
  expires_at: number | null;
}

/** Error raised when another host holds a live, unexpired host claim. */
export class HostClaimHeldError extends Error {
  readonly epoch: number;
  constructor(epoch: number) {
    super(`Another workflow host holds the state database: host epoch ${epoch} is still live`);
    this.name = "HostClaimHeldError";
    this.epoch = epoch;
  }
}

/** Takes the host claim with epoch + 1; refused while another live, unexpired claim exists. */
export function acquireHostClaim(
  store: StateStore,
  opts: { ownerId: string; token: string; ttlMs: number },
): HostClaim {
  if (!(opts.ttlMs > 0)) throw new RangeError(`Invalid host claim ttlMs: ${opts.ttlMs}`);
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const row = readHostClaim(store);
    if (row?.token_hash && (row.expires_at ?? 0) > now) throw new HostClaimHeldError(row.epoch);
    const epoch = (row?.epoch ?? 0) + 1;
    const expiresAt = now + opts.ttlMs;
    execute(
      store,
      "INSERT INTO host_claim (singleton, epoch, owner_id, token_hash, acquired_at, heartbeat_at, " +
        "expires_at, released_at) VALUES (1, :epoch, :ownerId, :tokenHash, :now, :now, :expiresAt, " +
        "NULL) ON CONFLICT (singleton) DO UPDATE SET epoch = :epoch, owner_id = :ownerId, " +
        "token_hash = :tokenHash, acquired_at = :now, heartbeat_at = :now, " +
        "expires_at = :expiresAt, released_at = NULL",
      { epoch, ownerId: opts.ownerId, tokenHash: hashToken(opts.token), now, expiresAt },
    );
    return { epoch, ownerId: opts.ownerId, token: opts.token, expiresAt };
  });
}

/** Extends the exact live host claim; returns the new expiry. Throws `ClaimLostError`. */
export function renewHostClaim(store: StateStore, claim: HostClaim, ttlMs: number): number {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    checkHostClaim(store, claim, now, true);
    const expiresAt = now + ttlMs;
    execute(
      store,
      "UPDATE host_claim SET heartbeat_at = :now, expires_at = :expiresAt WHERE singleton = 1",
      { now, expiresAt },
    );
    return expiresAt;
  });
}

/** Releases the exact host claim (the epoch stays, so the next host takes epoch + 1). */
export function releaseHostClaim(store: StateStore, claim: HostClaim): void {
  writeTransaction(store, () => {
    const now = store.clock.now();
    checkHostClaim(store, claim, now, false);
    execute(
      store,
      "UPDATE host_claim SET owner_id = NULL, token_hash = NULL, expires_at = NULL, " +
        "released_at = :now WHERE singleton = 1",
      { now },
    );
  });
}

/** The current host epoch and whether its claim is live at `now` (for status and doctor). */
export function readHostEpoch(
  store: StateStore,
  now = store.clock.now(),
): { epoch: number; live: boolean } | null {
  const row = readHostClaim(store);
  if (!row) return null;
  return { epoch: row.epoch, live: !!row.token_hash && (row.expires_at ?? 0) > now };
}

function checkHostClaim(store: StateStore, claim: HostClaim, now: number, live: boolean): void {
  const row = readHostClaim(store);
  const fail = (reason: ClaimLostError["reason"]) => new ClaimLostError(null, claim.epoch, reason);
  if (!row || !row.token_hash) throw fail("missingAuthority");
  if (row.owner_id !== claim.ownerId) throw fail("ownerChanged");
  if (row.token_hash !== hashToken(claim.token)) throw fail("tokenChanged");
  if (row.epoch !== claim.epoch) throw fail("generationChanged");
  if (live && (row.expires_at ?? 0) <= now) throw fail("expired");
}

function readHostClaim(store: StateStore): HostClaimRow | undefined {
  return queryOne<HostClaimRow>(
    store,
    "SELECT epoch, owner_id, token_hash, expires_at FROM host_claim WHERE singleton = 1",
  );
}

/**
 * The global host claim: one row holding the host epoch. A host takes epoch + 1 only when no
 * live, unexpired claim exists, or when the live claim's holder is provably gone: the row records
 * the holder's pid and process start identity, and a starting host that finds no process with
 * exactly that identity (killed, crashed) takes over at once instead of waiting out the lease.
 * A holder that is alive but silent (frozen, busy) keeps its lease. So two hosts never accept
 * commands against the same database.
 */
import { ClaimLostError } from "./errors.ts";
import { hashToken } from "./claims.ts";
import { type StateStore } from "./store.ts";
import { execute, queryOne } from "./statements.ts";
import { writeTransaction } from "./transactions.ts";

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
  start_identity: string | null;
}

/** How the previous claim ended, as the new holder found it. */
export type HostTakeover = "fresh" | "released" | "expired" | "holderGone";

export interface AcquireHostClaimOptions {
  ownerId: string;
  token: string;
  ttlMs: number;
  /** This process: pid and start identity (`pid:starttime`), or null where none can be read. */
  process?: { pid: number; startIdentity: string } | null;
  /**
   * Whether the process with this recorded start identity is provably gone. Without it (or with
   * no identity recorded) a live claim is only taken after its lease expired.
   */
  holderGone?: (startIdentity: string) => boolean;
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

/**
 * Takes the host claim with epoch + 1; refused (`HostClaimHeldError`) while another live,
 * unexpired claim exists whose holder is not provably gone.
 */
export function acquireHostClaim(
  store: StateStore,
  opts: AcquireHostClaimOptions,
): HostClaim & { takeover: HostTakeover } {
  if (!(opts.ttlMs > 0)) throw new RangeError(`Invalid host claim ttlMs: ${opts.ttlMs}`);
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const row = readHostClaim(store);
    let takeover: HostTakeover = row ? "released" : "fresh";
    if (row?.token_hash) {
      takeover = "expired";
      if ((row.expires_at ?? 0) > now) {
        const gone = row.start_identity !== null && opts.holderGone?.(row.start_identity) === true;
        if (!gone) throw new HostClaimHeldError(row.epoch);
        takeover = "holderGone";
      }
    }
    const epoch = (row?.epoch ?? 0) + 1;
    const expiresAt = now + opts.ttlMs;
    execute(
      store,
      "INSERT INTO host_claim (singleton, epoch, owner_id, token_hash, acquired_at, heartbeat_at, " +
        "expires_at, released_at, pid, start_identity) VALUES (1, :epoch, :ownerId, :tokenHash, " +
        ":now, :now, :expiresAt, NULL, :pid, :startIdentity) ON CONFLICT (singleton) DO UPDATE " +
        "SET epoch = :epoch, owner_id = :ownerId, token_hash = :tokenHash, acquired_at = :now, " +
        "heartbeat_at = :now, expires_at = :expiresAt, released_at = NULL, pid = :pid, " +
        "start_identity = :startIdentity",
      {
        epoch,
        ownerId: opts.ownerId,
        tokenHash: hashToken(opts.token),
        now,
        expiresAt,
        pid: opts.process?.pid ?? null,
        startIdentity: opts.process?.startIdentity ?? null,
      },
    );
    return { epoch, ownerId: opts.ownerId, token: opts.token, expiresAt, takeover };
  });
}

/** Extends the exact live host claim; returns the new expiry. Throws `ClaimLostError`. */
export function renewHostClaim(
  store: StateStore,
  claim: HostClaim,
  ttlMs: number,
  /**
   * Renew even a lapsed lease while it is still this host's (same owner, token and epoch: no
   * host took over): a lease that ran out while a full disk refused every write.
   */
  lapsed = false,
): number {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    checkHostClaim(store, claim, now, !lapsed);
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
        "pid = NULL, start_identity = NULL, released_at = :now WHERE singleton = 1",
      { now },
    );
  });
}

/**
 * The current host epoch, whether its claim is live at `now`, and until when (for status and
 * doctor). A live claim does not prove a host runs: a killed host's lease runs until it expires.
 */
export function readHostEpoch(
  store: StateStore,
  now = store.clock.now(),
): { epoch: number; live: boolean; leaseUntil: number | null } | null {
  const row = readHostClaim(store);
  if (!row) return null;
  const live = !!row.token_hash && (row.expires_at ?? 0) > now;
  return { epoch: row.epoch, live, leaseUntil: live ? row.expires_at : null };
}

/**
 * The epoch and start identity of a live host claim, or null when no claim is live (released,
 * expired). Never shown: `host stop` waits on it.
 */
export function liveHostHolder(
  store: StateStore,
  now = store.clock.now(),
): { epoch: number; startIdentity: string | null } | null {
  const row = readHostClaim(store);
  if (!row || !row.token_hash || (row.expires_at ?? 0) <= now) return null;
  return { epoch: row.epoch, startIdentity: row.start_identity };
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
    "SELECT epoch, owner_id, token_hash, expires_at, start_identity FROM host_claim " +
      "WHERE singleton = 1",
  );
}

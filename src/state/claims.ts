/**
 * Claims: time-limited, generation-fenced rights to change one resource (spec "Claim rules");
 * the protected write built on them is in protected-write.ts. A raw token lives only in the
 * holder's memory; the database keeps its sha256. Generations only grow, even across release.
 *
 * A host claim also names the host epoch of the host that took it. Once another host holds a
 * newer epoch, the claim is fenced: a protected write or renewal with it fails
 * (`ownerChanged`), and it counts as expired for recovery and commands, so a new host takes over
 * a dead host's runs at once instead of waiting for their leases to run out.
 */
import { sha256Hex } from "../protocol/canonical-json.ts";
import { ClaimLostError } from "./errors.ts";
import { type StateStore } from "./store.ts";
import { execute, queryOne } from "./statements.ts";
import { writeTransaction } from "./transactions.ts";

export type ClaimOwnerType = "host" | "control";

export interface Claim {
  /** Claimed resource, `run:<runId>` for runs. */
  readonly resource: string;
  /** The run a run claim belongs to, else null. */
  readonly runId: string | null;
  readonly ownerType: ClaimOwnerType;
  readonly ownerId: string;
  /** Raw token: memory only, never logged or stored. */
  readonly token: string;
  readonly generation: number;
  /** The host epoch that took a host claim (null for control claims). */
  readonly hostEpoch: number | null;
  /** Expiry as of acquisition (renewals move the stored one). */
  readonly expiresAt: number;
}

export interface AcquireClaimOptions {
  resource: string;
  runId?: string | null;
  ownerType: ClaimOwnerType;
  ownerId: string;
  /** Defaults to a fresh `store.ids.token()`. */
  token?: string;
  ttlMs: number;
  /** The taking host's epoch: required for a host claim, absent for a control claim. */
  hostEpoch?: number;
}

interface LeaseRow {
  resource: string;
  run_id: string | null;
  owner_type: string | null;
  owner_id: string | null;
  token_hash: string | null;
  generation: number;
  ttl_ms: number | null;
  expires_at: number | null;
  host_epoch: number | null;
}

/** The lease resource name of a run. */
export function runResource(runId: string): string {
  return `run:${runId}`;
}

/** sha256 hex of a claim token: the only form a token takes in the database. */
export function hashToken(token: string): string {
  return sha256Hex(token);
}

// Per claim object, what every write of it would otherwise recompute: the token hash (once per
// claim, not per write) and the lease ttl, learned at the claim's first protected write. A lease's
// ttl is set only by acquisition, which also increases the generation, so it is fixed for the
// generation a write matches. Token, resource and generation are kept beside them and compared,
// so a claim object that changed is looked up afresh.
interface ClaimFacts {
  token: string;
  resource: string;
  generation: number;
  hash: string;
  ttlMs: number | null;
}
const claimFactsCache = new WeakMap<Claim, ClaimFacts>();

export function claimFacts(claim: Claim): ClaimFacts {
  const cached = claimFactsCache.get(claim);
  if (
    cached && cached.token === claim.token && cached.resource === claim.resource &&
    cached.generation === claim.generation
  ) {
    return cached;
  }
  const facts: ClaimFacts = {
    token: claim.token,
    resource: claim.resource,
    generation: claim.generation,
    hash: hashToken(claim.token),
    ttlMs: null,
  };
  claimFactsCache.set(claim, facts);
  return facts;
}

function claimTokenHash(claim: Claim): string {
  return claimFacts(claim).hash;
}

/** The run id of a run claim; throws for other claims. */
export function claimRunId(claim: Claim): string {
  if (!claim.runId) throw new ClaimLostError(null, claim.generation, "missingAuthority");
  return claim.runId;
}

/** The epoch of the host that holds the host claim now, or null when no host holds it. */
export function currentHostEpochInTx(store: StateStore): number | null {
  return queryOne<{ epoch: number }>(
    store,
    "SELECT epoch FROM host_claim WHERE singleton = 1 AND token_hash IS NOT NULL",
  )?.epoch ?? null;
}

/**
 * SQL condition on the leases row `alias`: a host claim taken under an epoch other than the one
 * that holds the host claim now (fenced, so it counts as expired). `leaseHolds` in SQL form.
 */
export function fencedLeaseSql(alias: string): string {
  return `(${alias}.host_epoch IS NOT NULL AND ${alias}.host_epoch IS NOT (SELECT epoch FROM ` +
    "host_claim WHERE singleton = 1 AND token_hash IS NOT NULL))";
}

/**
 * Whether `lease` still holds its resource at `now`: claimed, unexpired, and, for a host claim,
 * taken under the host epoch that holds the host claim now (an older epoch's claim is fenced).
 */
export function leaseHolds(
  lease: LeaseRow | undefined,
  now: number,
  epoch: number | null,
): boolean {
  if (!lease?.token_hash || (lease.expires_at ?? 0) <= now) return false;
  return lease.host_epoch === null || lease.host_epoch === epoch;
}

/**
 * Takes `resource` when it has no claim, an expired one, or one fenced by a newer host epoch; the
 * generation increases. Throws `ClaimLostError(ownerChanged)` while another live claim holds it.
 */
export function acquireClaim(store: StateStore, opts: AcquireClaimOptions): Claim {
  return writeTransaction(store, () => acquireClaimInTx(store, opts, store.clock.now()));
}

/** `acquireClaim` inside the caller's transaction. */
export function acquireClaimInTx(
  store: StateStore,
  opts: AcquireClaimOptions,
  now: number,
): Claim {
  if (!(opts.ttlMs > 0)) throw new RangeError(`Invalid claim ttlMs: ${opts.ttlMs}`);
  if ((opts.ownerType === "host") !== (opts.hostEpoch !== undefined)) {
    throw new TypeError("A host claim names its host epoch; a control claim names none");
  }
  const current = readLease(store, opts.resource);
  if (current && leaseHolds(current, now, currentHostEpochInTx(store))) {
    throw new ClaimLostError(opts.runId ?? null, current.generation, "ownerChanged");
  }
  const token = opts.token ?? store.ids.token();
  const generation = (current?.generation ?? 0) + 1;
  const expiresAt = now + opts.ttlMs;
  execute(
    store,
    "INSERT INTO leases (resource, run_id, owner_type, owner_id, token_hash, generation, ttl_ms, " +
      "acquired_at, heartbeat_at, expires_at, released_at, host_epoch) VALUES (:resource, :runId, " +
      ":ownerType, :ownerId, :tokenHash, :generation, :ttlMs, :now, :now, :expiresAt, NULL, " +
      ":hostEpoch) ON CONFLICT (resource) DO UPDATE SET owner_type = :ownerType, " +
      "owner_id = :ownerId, token_hash = :tokenHash, generation = :generation, ttl_ms = :ttlMs, " +
      "acquired_at = :now, heartbeat_at = :now, expires_at = :expiresAt, released_at = NULL, " +
      "host_epoch = :hostEpoch",
    {
      resource: opts.resource,
      runId: opts.runId ?? null,
      ownerType: opts.ownerType,
      ownerId: opts.ownerId,
      tokenHash: hashToken(token),
      generation,
      ttlMs: opts.ttlMs,
      now,
      expiresAt,
      hostEpoch: opts.hostEpoch ?? null,
    },
  );
  return {
    resource: opts.resource,
    runId: opts.runId ?? null,
    ownerType: opts.ownerType,
    ownerId: opts.ownerId,
    token,
    generation,
    hostEpoch: opts.hostEpoch ?? null,
    expiresAt,
  };
}

/**
 * Checks that `claim` is the exact live claim of its resource (spec steps 1-3; a host claim also
 * under the current host epoch) and returns the lease. Throws `ClaimLostError` with the first
 * failed check.
 */
export function checkClaimInTx(store: StateStore, claim: Claim, now: number): LeaseRow {
  const lease = readOwnLease(store, claim);
  if ((lease.expires_at ?? 0) <= now) {
    throw new ClaimLostError(claim.runId, claim.generation, "expired");
  }
  if (claim.hostEpoch !== null && claim.hostEpoch !== currentHostEpochInTx(store)) {
    throw new ClaimLostError(claim.runId, claim.generation, "ownerChanged");
  }
  return lease;
}

/** True when `claim` is exactly the live, unfenced claim of its resource (no throw). */
export function isExactLiveClaimInTx(store: StateStore, claim: Claim, now: number): boolean {
  try {
    checkClaimInTx(store, claim, now);
    return true;
  } catch (error) {
    if (error instanceof ClaimLostError) return false;
    throw error;
  }
}

/** The lease of `claim` when owner, token and generation still match (expiry not checked). */
function readOwnLease(store: StateStore, claim: Claim): LeaseRow {
  const lease = readLease(store, claim.resource);
  const fail = (reason: ClaimLostError["reason"]) =>
    new ClaimLostError(claim.runId, claim.generation, reason);
  if (!lease || !lease.token_hash) throw fail("missingAuthority");
  if (
    lease.owner_type !== claim.ownerType || lease.owner_id !== claim.ownerId ||
    lease.host_epoch !== claim.hostEpoch
  ) {
    throw fail("ownerChanged");
  }
  if (lease.token_hash !== claimTokenHash(claim)) throw fail("tokenChanged");
  if (lease.generation !== claim.generation) throw fail("generationChanged");
  return lease;
}

/** Extends a live claim by its ttl; returns the new expiry. An expired claim never renews. */
export function renewClaim(store: StateStore, claim: Claim): number {
  return writeTransaction(store, () => renewClaimInTx(store, claim, store.clock.now()));
}

/** `renewClaim` inside the caller's transaction. */
export function renewClaimInTx(store: StateStore, claim: Claim, now: number): number {
  return renewLeaseInTx(store, checkClaimInTx(store, claim, now), now);
}

function renewLeaseInTx(store: StateStore, lease: LeaseRow, now: number): number {
  const ttlMs = lease.ttl_ms ?? 0;
  const expiresAt = renewedExpiry(now, ttlMs);
  execute(
    store,
    "UPDATE leases SET heartbeat_at = :heartbeatAt, expires_at = :expiresAt " +
      "WHERE resource = :resource",
    { heartbeatAt: renewalTickStart(now, ttlMs), expiresAt, resource: lease.resource },
  );
  return expiresAt;
}

/**
 * Renewals keep heartbeat and expiry at the resolution of a tick of ttl/64 (468 ms for the
 * default 30 s): the heartbeat is the start of the tick `now` falls in and the expiry that plus
 * the ttl, so a renewed claim lasts at least ttl - ttl/64 and never longer than its ttl. Every
 * renewal within one tick writes the same bytes, and SQLite leaves a page whose cell did not
 * change unwritten: a run's protected writes in one burst write its lease page once per tick
 * instead of once per commit (one B-tree leaf fewer per write: docs/state.md "Claim renewal").
 * `RENEWED_HEARTBEAT_SQL` / `RENEWED_EXPIRY_SQL` are the same formulas on a row's `ttl_ms`.
 */
export function renewalTick(ttlMs: number): number {
  return Math.max(Math.floor(ttlMs / 64), 1);
}

export function renewalTickStart(now: number, ttlMs: number): number {
  return now - (now % renewalTick(ttlMs));
}

/** The expiry a renewal at `now` gives a claim of `ttlMs`. */
export function renewedExpiry(now: number, ttlMs: number): number {
  return renewalTickStart(now, ttlMs) + ttlMs;
}

// SQLite's integer division and `%` agree with the functions above for positive integers.
const TICK_SQL = "MAX(ttl_ms / 64, 1)";
export const RENEWED_HEARTBEAT_SQL = `?1 - ?1 % ${TICK_SQL}`;
export const RENEWED_EXPIRY_SQL = `?1 - ?1 % ${TICK_SQL} + ttl_ms`;

/** Releases the exact claim (owner, token, generation). An expired claim may still release. */
export function releaseClaim(store: StateStore, claim: Claim): void {
  writeTransaction(store, () => releaseClaimInTx(store, claim, store.clock.now()));
}

export function releaseClaimInTx(store: StateStore, claim: Claim, now: number): void {
  readOwnLease(store, claim);
  releaseLeaseInTx(store, claim.resource, now);
}

/** Clears whatever claim `resource` has (the generation stays). Transitions use this. */
export function releaseLeaseInTx(store: StateStore, resource: string, now: number): void {
  execute(
    store,
    "UPDATE leases SET owner_type = NULL, owner_id = NULL, token_hash = NULL, ttl_ms = NULL, " +
      "expires_at = NULL, host_epoch = NULL, released_at = :now WHERE resource = :resource",
    { resource, now },
  );
}

export function readLease(store: StateStore, resource: string): LeaseRow | undefined {
  return queryOne<LeaseRow>(
    store,
    "SELECT resource, run_id, owner_type, owner_id, token_hash, generation, ttl_ms, expires_at, " +
      "host_epoch FROM leases WHERE resource = :resource",
    { resource },
  );
}

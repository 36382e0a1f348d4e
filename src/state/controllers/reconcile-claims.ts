/**
 * Reconcile claims. A reconcile of one resource holds the lease `reconcile:<uid>` (owner: the
 * host, generation + 1 per claim, renewed by the host timer). Every write a reconcile proposes
 * (effects, child workflows, its result) is a `reconcileWrite`: the exact live claim is checked
 * in the same transaction as the change, so a fenced reconcile changes nothing.
 */
import {
  acquireClaimInTx,
  checkClaimInTx,
  type Claim,
  currentHostEpochInTx,
  fencedLeaseSql,
  leaseHolds,
  readLease,
  releaseLeaseInTx,
} from "../claims.ts";
import { ClaimLostError } from "../errors.ts";
import { type StateStore } from "../store.ts";
import { execute, queryAll, queryOne } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import type { ControllerResource } from "../../protocol/controller-resource.ts";
import {
  appendControllerEvent,
  readResourceRow,
  reconcileLease,
  removeIfDeletableInTx,
  type ResourceRow,
  resourceSelect,
  toResource,
} from "./controller-records.ts";

export interface DueReconcile {
  uid: string;
  controllerId: string;
}

/** Resources due for a reconcile now (oldest first), of controllers that are not blocked. */
export function listDueReconciles(store: StateStore, now: number, limit: number): DueReconcile[] {
  return queryAll<{ uid: string; controller_id: string }>(
    store,
    "SELECT q.uid, r.controller_id FROM controller_queue q JOIN controller_resources r " +
      "ON r.uid = q.uid JOIN controllers c ON c.controller_id = r.controller_id " +
      "WHERE q.pending = 1 AND q.claim_version IS NULL AND q.available_at <= :now " +
      "AND c.blocked_reason IS NULL ORDER BY q.available_at LIMIT :limit",
    { now, limit: Math.max(0, Math.floor(limit)) },
  ).map((r) => ({ uid: r.uid, controllerId: r.controller_id }));
}

/** The earliest time a reconcile falls due (now or later), or null when none is pending. */
export function nextReconcileDue(store: StateStore): number | null {
  return queryOne<{ at: number | null }>(
    store,
    "SELECT MIN(q.available_at) AS at FROM controller_queue q WHERE q.pending = 1 " +
      "AND q.claim_version IS NULL AND NOT EXISTS (SELECT 1 FROM controller_resources r JOIN " +
      "controllers c ON c.controller_id = r.controller_id WHERE r.uid = q.uid " +
      "AND c.blocked_reason IS NOT NULL)",
  )?.at ?? null;
}

export interface ReconcileClaim {
  claim: Claim;
  uid: string;
  controllerId: string;
  /** The resource as the reconcile sees it (its version is the compare-and-set token). */
  resource: ControllerResource;
  /** Errors in a row before this reconcile (drives the backoff of the next one). */
  consecutiveErrors: number;
}

export interface ClaimReconcilesOptions {
  uids: readonly string[];
  ownerId: string;
  /** The claiming host's epoch: a reconcile claim is fenced once a newer host holds the db. */
  hostEpoch: number;
  ttlMs: number;
  /** A fresh secret token per claim. */
  token: () => string;
}

/** The resource with its queue row's error count, while the queue row is due and unclaimed. */
const DUE_RESOURCE_SELECT =
  `${resourceSelect(", q.consecutive_errors")} JOIN controller_queue q ON q.uid = r.uid ` +
  "WHERE r.uid = :uid AND q.pending = 1 AND q.claim_version IS NULL AND q.available_at <= :now";

interface DueRow extends ResourceRow {
  consecutive_errors: number;
}

/**
 * Claims due resources for reconciles, in one transaction. A resource that is no longer due or
 * is claimed by someone else is skipped. Event `reconcile.started` per claim.
 */
export function claimReconciles(store: StateStore, opts: ClaimReconcilesOptions): ReconcileClaim[] {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const claims: ReconcileClaim[] = [];
    for (const uid of opts.uids) {
      const row = queryOne<DueRow>(store, DUE_RESOURCE_SELECT, { uid, now });
      if (!row || row.removed_at !== null) continue;
      const claim = acquireOrSkip(store, uid, opts, now);
      if (!claim) continue;
      execute(
        store,
        "UPDATE controller_queue SET pending = 0, claim_version = version, updated_at = :now " +
          "WHERE uid = :uid",
        { uid, now },
      );
      appendControllerEvent(store, uid, row.resource_version, "reconcile.started", {
        generation: claim.generation,
      }, now);
      claims.push({
        claim,
        uid,
        controllerId: row.controller_id,
        resource: toResource(row),
        consecutiveErrors: row.consecutive_errors,
      });
    }
    return claims;
  });
}

/**
 * The reconcile claim of `uid`, or null while another live claim holds it: `acquireClaimInTx`
 * reads the lease and refuses before it writes anything, so its refusal is the one check.
 */
function acquireOrSkip(
  store: StateStore,
  uid: string,
  opts: ClaimReconcilesOptions,
  now: number,
): Claim | null {
  try {
    return acquireClaimInTx(store, {
      resource: reconcileLease(uid),
      ownerType: "host",
      ownerId: opts.ownerId,
      hostEpoch: opts.hostEpoch,
      token: opts.token(),
      ttlMs: opts.ttlMs,
    }, now);
  } catch (error) {
    if (error instanceof ClaimLostError && error.reason === "ownerChanged") return null;
    throw error;
  }
}

export interface ReconcileTx {
  now: number;
  row: ResourceRow;
}

/**
 * A write proposed by a reconcile: checks that `claim` is still the exact live claim of the
 * resource, then applies `change`, both in one transaction. Throws `ClaimLostError` (nothing
 * changed) when the reconcile was fenced or its claim expired. It does not renew the claim: the
 * host's renewal timer does (reconcile-holds.ts), one statement less per proposal.
 */
export function reconcileWrite<T>(
  store: StateStore,
  claim: Claim,
  uid: string,
  change: (tx: ReconcileTx) => T,
): T {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    if (claim.resource !== reconcileLease(uid)) {
      throw new ClaimLostError(null, claim.generation, "missingAuthority");
    }
    checkClaimInTx(store, claim, now);
    const row = readResourceRow(store, uid);
    if (!row) throw new ClaimLostError(null, claim.generation, "missingAuthority");
    return change({ now, row });
  });
}

export interface QueueAfter {
  /** Whether another reconcile is wanted. */
  pending: boolean;
  /** When it is due (epoch ms), when pending. */
  availableAt: number;
}

/**
 * Ends the claim of a reconcile inside its transaction: the queue row takes `next` (a request
 * that arrived during the reconcile makes it due at once), the lease is released, and a resource
 * being deleted whose finalizers are empty is removed. `row` is the resource as this transaction
 * read it (undefined: none): a deletion is requested only in a transaction of its own, so a row
 * without one needs no second look. Returns whether it was removed.
 */
export function endClaimInTx(
  store: StateStore,
  uid: string,
  now: number,
  next: QueueAfter,
  errors: { count: "reset" | "keep" | "increase"; code?: string; message?: string },
  row: ResourceRow | undefined,
): boolean {
  // SET expressions read the row as it was: `version > claim_version` is a request that came
  // during the reconcile.
  execute(
    store,
    "UPDATE controller_queue SET pending = CASE WHEN :pending = 1 OR version > claim_version " +
      "THEN 1 ELSE 0 END, available_at = CASE WHEN version > claim_version THEN :now " +
      "ELSE :availableAt END, " +
      "claim_version = NULL, consecutive_errors = CASE :count WHEN 'reset' THEN 0 " +
      "WHEN 'increase' THEN consecutive_errors + 1 ELSE consecutive_errors END, " +
      "last_error_code = CASE :count WHEN 'reset' THEN NULL WHEN 'increase' THEN :code " +
      "ELSE last_error_code END, last_error_message = CASE :count WHEN 'reset' THEN NULL " +
      "WHEN 'increase' THEN :message ELSE last_error_message END, updated_at = :now " +
      "WHERE uid = :uid",
    {
      uid,
      pending: next.pending ? 1 : 0,
      availableAt: next.availableAt,
      count: errors.count,
      code: errors.code ?? null,
      message: errors.message?.slice(0, 8192) ?? null,
      now,
    },
  );
  releaseLeaseInTx(store, reconcileLease(uid), now);
  if (row === undefined || row.deletion_requested_at === null) return false;
  return removeIfDeletableInTx(store, uid, now);
}

/**
 * When the earliest reconcile claim not in `held` (one an earlier host left) expires, or null:
 * recovery can take it then.
 */
export function nextForeignClaimExpiry(
  store: StateStore,
  held: ReadonlySet<string>,
): number | null {
  let earliest: number | null = null;
  for (
    const row of queryAll<{ uid: string; expires_at: number | null; fenced: number }>(
      store,
      `SELECT q.uid, l.expires_at, ${fencedLeaseSql("l")} AS fenced FROM controller_queue q ` +
        "LEFT JOIN leases l ON l.resource = 'reconcile:' || q.uid WHERE q.claim_version IS NOT NULL",
    )
  ) {
    if (held.has(row.uid)) continue;
    // A claim of an older host epoch is fenced: recoverable at once.
    const at = row.fenced ? 0 : row.expires_at ?? 0;
    if (earliest === null || at < earliest) earliest = at;
  }
  return earliest;
}

/** Resources whose reconcile claim expired or was fenced by a newer host epoch, without an end. */
export function listExpiredReconciles(store: StateStore, now: number): string[] {
  return queryAll<{ uid: string }>(
    store,
    "SELECT q.uid FROM controller_queue q LEFT JOIN leases l ON l.resource = 'reconcile:' || " +
      "q.uid WHERE q.claim_version IS NOT NULL AND (l.token_hash IS NULL OR l.expires_at <= :now " +
      `OR ${fencedLeaseSql("l")})`,
    { now },
  ).map((r) => r.uid);
}

/**
 * Recovery of an expired reconcile claim: a control claim proves the old lease expired and
 * fences its owner; effects it left applying return to pending (read back, or retried under
 * their key) or, non-resumable ones, become ambiguous; the resource is due again now.
 */
export function recoverExpiredReconcile(
  store: StateStore,
  opts: { uid: string; ownerId: string; token: string; ttlMs: number },
): boolean {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const lease = readLease(store, reconcileLease(opts.uid));
    if (lease && leaseHolds(lease, now, currentHostEpochInTx(store))) {
      throw new ClaimLostError(null, lease.generation, "ownerChanged");
    }
    const control = acquireClaimInTx(store, {
      resource: reconcileLease(opts.uid),
      ownerType: "control",
      ownerId: opts.ownerId,
      token: opts.token,
      ttlMs: opts.ttlMs,
    }, now);
    const row = readResourceRow(store, opts.uid);
    if (row) {
      const released = releaseApplyingEffects(store, opts.uid, now);
      appendControllerEvent(store, opts.uid, row.resource_version, "reconcile.recovered", {
        generation: control.generation,
        pendingEffects: released.pending,
        ambiguousEffects: released.ambiguous,
      }, now);
    }
    endClaimInTx(store, opts.uid, now, { pending: true, availableAt: now }, { count: "keep" }, row);
    return true;
  });
}

/**
 * A reconcile that will run again (its worker died, the host stops or died): an applying effect
 * returns to `pending` when a retry is safe (read back first, or idempotent under its key); a
 * non-resumable one becomes `ambiguous`, never retried automatically. Returns both counts.
 */
export function releaseApplyingEffects(
  store: StateStore,
  uid: string,
  now: number,
): { pending: number; ambiguous: number } {
  execute(
    store,
    "UPDATE effect_attempts SET state = CASE (SELECT e.contract FROM effects e WHERE " +
      "e.effect_id = effect_attempts.effect_id) WHEN 'nonResumable' THEN 'ambiguous' ELSE " +
      "'cancelled' END, finished_at = :now WHERE state = 'applying' AND effect_id IN " +
      "(SELECT effect_id FROM effects WHERE resource_uid = :uid)",
    { uid, now },
  );
  const ambiguous = execute(
    store,
    "UPDATE effects SET state = 'ambiguous', updated_at = :now WHERE resource_uid = :uid " +
      "AND state = 'applying' AND contract = 'nonResumable'",
    { uid, now },
  );
  const pending = execute(
    store,
    "UPDATE effects SET state = 'pending', updated_at = :now WHERE resource_uid = :uid " +
      "AND state = 'applying'",
    { uid, now },
  );
  return { pending, ambiguous };
}

/** A reconcile that ended without settling an effect: its outcome cannot be proven. */
export function markApplyingEffectsAmbiguous(store: StateStore, uid: string, now: number): number {
  // Usually there is none (every effect was settled): one indexed look instead of two updates.
  const applying = queryOne(
    store,
    "SELECT 1 AS one FROM effects WHERE resource_uid = :uid AND state = 'applying' LIMIT 1",
    { uid },
  );
  if (!applying) return 0;
  execute(
    store,
    "UPDATE effect_attempts SET state = 'ambiguous', finished_at = :now WHERE state = 'applying' " +
      "AND effect_id IN (SELECT effect_id FROM effects WHERE resource_uid = :uid)",
    { uid, now },
  );
  return execute(
    store,
    "UPDATE effects SET state = 'ambiguous', updated_at = :now WHERE resource_uid = :uid " +
      "AND state = 'applying'",
    { uid, now },
  );
}

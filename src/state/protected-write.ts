/**
 * The spec's protected write: one transaction that checks and renews the writer's claim, applies
 * the change and appends its event (with the worker message's receipt) and viewer delta; the
 * event's seq is the new run revision (journal.ts). Every worker-proposed transition and host
 * command on a run goes through it.
 */
import {
  ClaimLostError,
  endedState,
  NotFoundError,
  RevisionConflictError,
  TransitionError,
} from "./errors.ts";
import { appendHistory, isTerminalRunState, type JournalEntry, runRevisionSql } from "./journal.ts";
import type { MessageReceiptInput } from "./message-receipts.ts";
import {
  checkClaimInTx,
  type Claim,
  claimFacts,
  RENEWED_EXPIRY_SQL,
  RENEWED_HEARTBEAT_SQL,
  renewedExpiry,
  runResource,
} from "./claims.ts";
import { type StateStore } from "./store.ts";
import { executeArgs, queryOneArgs } from "./statements.ts";
import { writeTransaction } from "./transactions.ts";

export interface RunRow {
  run_id: string;
  state: string;
  paused: number;
  blocked_reason: string | null;
  /** The run revision: the seq of its newest event (journal.ts `runRevisionSql`). */
  revision: number;
  queue_state: string;
}

// The run and queue rows plus the revision (and `extraColumns`), read in one statement (the
// revision is one descending seek of the events key, on the leaf the change's event then
// appends to).
function runRowSql(extraColumns: string): string {
  return "SELECT r.run_id, r.state, r.paused, r.blocked_reason, q.state AS queue_state, " +
    `${runRevisionSql()} AS revision${extraColumns} ` +
    "FROM runs r JOIN run_queue q ON q.run_id = r.run_id WHERE r.run_id = ?1";
}
const RUN_ROW_SQL = runRowSql("");
// The write also reads the run's number, which the change's event key needs.
const WRITE_RUN_ROW_SQL = runRowSql(", r.run_no");

/** The run a protected write changes, plus the optional atomic checks and receipt. */
export interface ProtectedTarget extends WorkerWriteOptions {
  runId: string;
}

/**
 * Options every worker-proposed transition accepts: the revision the worker saw (a mismatch
 * throws `RevisionConflictError` and changes nothing) and the receipt of the worker message,
 * stored in the change's event (same transaction) so a retried message gets the same answer.
 */
export interface WorkerWriteOptions {
  expectedRevision?: number;
  receipt?: MessageReceiptInput;
}

/** The protected-write target of a worker-proposed transition on `runId`. */
export function workerTarget(runId: string, opts: WorkerWriteOptions): ProtectedTarget {
  return { runId, expectedRevision: opts.expectedRevision, receipt: opts.receipt };
}

export interface ProtectedTx {
  readonly store: StateStore;
  readonly now: number;
  readonly runId: string;
  readonly claim: Claim;
  /** The run and queue rows as read in step 1 (`revision` is the one before this change). */
  readonly run: RunRow;
  /** The run revision this change produces. */
  readonly revision: number;
}

export interface ProtectedChange<T> extends JournalEntry {
  result: T;
}

export interface ProtectedResult<T> {
  result: T;
  /** The run revision after the change. */
  revision: number;
  /** The claim's renewed expiry. */
  expiresAt: number;
}

// A host claim renews only under the epoch that holds the host claim now (the fence). The
// renewed times move once per renewal tick (claims.ts `renewedExpiry`).
const RENEW_SQL =
  `UPDATE leases SET heartbeat_at = ${RENEWED_HEARTBEAT_SQL}, expires_at = ${RENEWED_EXPIRY_SQL} ` +
  "WHERE resource = ?2 AND owner_type = ?3 AND owner_id = ?4 AND token_hash = ?5 " +
  "AND generation = ?6 AND expires_at > ?1 AND host_epoch IS ?7 AND (?7 IS NULL OR ?7 = " +
  "(SELECT epoch FROM host_claim WHERE singleton = 1 AND token_hash IS NOT NULL))";
const RENEW_RETURNING_SQL = `${RENEW_SQL} RETURNING ttl_ms`;

/**
 * The spec's protected write, in one transaction: read revision and lease, compare owner, token
 * and generation, require a future expiry, renew, apply `change`, append its event and viewer
 * delta (the event's seq is the increased revision), commit. Any failed check or throw changes
 * nothing.
 */
export function protectedWrite<T>(
  store: StateStore,
  claim: Claim,
  target: ProtectedTarget,
  change: (tx: ProtectedTx) => ProtectedChange<T>,
): ProtectedResult<T> {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    if (claim.resource !== runResource(target.runId)) {
      throw new ClaimLostError(target.runId, claim.generation, "missingAuthority");
    }
    // Steps 2-4 in one statement on the fast path; on a miss, find the failed check's reason.
    // Once the claim's ttl is known the renewal needs no RETURNING (which costs ~3 µs).
    const facts = claimFacts(claim);
    const args = [
      now,
      claim.resource,
      claim.ownerType,
      claim.ownerId,
      facts.hash,
      claim.generation,
      claim.hostEpoch,
    ] as const;
    let expiresAt: number | null = null;
    if (facts.ttlMs !== null) {
      if (executeArgs(store, RENEW_SQL, ...args) === 1) expiresAt = renewedExpiry(now, facts.ttlMs);
    } else {
      const renewed = queryOneArgs<{ ttl_ms: number }>(
        store,
        RENEW_RETURNING_SQL,
        ...args,
      );
      if (renewed) {
        facts.ttlMs = renewed.ttl_ms;
        expiresAt = renewedExpiry(now, renewed.ttl_ms);
      }
    }
    if (expiresAt === null) {
      checkClaimInTx(store, claim, now);
      throw new ClaimLostError(target.runId, claim.generation, "missingAuthority");
    }
    // Step 1's revision read. Step 7's increase is the event `appendHistory` appends: its seq is
    // the new revision, and the events key refuses a revision taken twice.
    const row = queryOneArgs<RunRow & { run_no: number }>(store, WRITE_RUN_ROW_SQL, target.runId);
    if (!row) throw new NotFoundError("run", target.runId);
    const run: RunRow = row;
    // A terminal run never changes again (its claim is released too; this is the backstop).
    if (isTerminalRunState(run.state)) {
      throw new TransitionError(run.run_id, "change", endedState(run.state));
    }
    const revision = run.revision + 1;
    if (target.expectedRevision !== undefined && target.expectedRevision !== run.revision) {
      throw new RevisionConflictError(target.runId, target.expectedRevision, run.revision);
    }
    const outcome = change({ store, now, runId: target.runId, claim, run, revision });
    appendHistory(
      store,
      target.runId,
      revision,
      now,
      outcome,
      target.receipt,
      outcome.result,
      row.run_no,
    );
    return { result: outcome.result, revision, expiresAt };
  });
}

export function readRunRow(store: StateStore, runId: string): RunRow | undefined {
  return queryOneArgs<RunRow>(store, RUN_ROW_SQL, runId);
}

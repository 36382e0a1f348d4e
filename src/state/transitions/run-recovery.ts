/**
 * Recovery of an expired running row (host restart, lost worker): a control claim proves the
 * old lease expired (or was taken under an earlier host epoch, which fences it at once) and
 * fences its owner, then the run parks at its last durable boundary.
 */
import {
  acquireClaimInTx,
  type Claim,
  claimRunId,
  currentHostEpochInTx,
  leaseHolds,
  readLease,
  releaseLeaseInTx,
  runResource,
} from "../claims.ts";
import { protectedWrite, workerTarget, type WorkerWriteOptions } from "../protected-write.ts";
import { ClaimLostError } from "../errors.ts";
import { appendHistory, nextRevision } from "../journal.ts";
import { type StateStore } from "../store.ts";
import { execute, queryAll } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { expectState, requireRun, stopAtBoundary } from "./common.ts";

const CRASHED = { code: "workerCrashed", message: "The worker stopped before the node finished" };

export interface RecoverExpiredRunOptions {
  runId: string;
  /** The recovering host's owner id (recorded on the control claim). */
  ownerId: string;
  /** Fresh token for the control claim. */
  token: string;
  ttlMs: number;
}

export interface RecoveryResult {
  revision: number;
  /** The generation of the control claim (fences the old owner). */
  generation: number;
  /** The attempt that was running, now `interrupted`, if any. */
  interruptedAttemptId: string | null;
  /** True when an external effect became ambiguous and the run is blocked `effectAmbiguous`. */
  blocked: boolean;
  /** Worker epochs that were still recorded active and are now `orphaned` (reap them). */
  orphanedWorkerEpochs: string[];
}

/**
 * `running/starting|running` with an expired claim -> `running/parked`. A running `pure`
 * attempt becomes `interrupted` (it runs again as a new attempt). A running `external` attempt
 * also becomes `interrupted`, and unless all its effects settled, its applying effects become
 * `ambiguous` and the run is blocked `effectAmbiguous` for manual review. Still-active worker
 * epochs of the run become `orphaned`. The control claim is released before commit.
 */
export function recoverExpiredRun(
  store: StateStore,
  opts: RecoverExpiredRunOptions,
): RecoveryResult {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const run = requireRun(store, opts.runId);
    expectState(
      run,
      "recover",
      (r) => r.state === "running" && (r.queue_state === "starting" || r.queue_state === "running"),
    );
    const lease = readLease(store, runResource(opts.runId));
    // A claim of an earlier host epoch is fenced: it counts as expired at once.
    if (lease && leaseHolds(lease, now, currentHostEpochInTx(store))) {
      throw new ClaimLostError(opts.runId, lease.generation, "ownerChanged");
    }
    const control = acquireClaimInTx(store, {
      resource: runResource(opts.runId),
      runId: opts.runId,
      ownerType: "control",
      ownerId: opts.ownerId,
      token: opts.token,
      ttlMs: opts.ttlMs,
    }, now);
    const revision = nextRevision(store, opts.runId);
    const { interruptedAttemptId, blocked } = stopAtBoundary(store, opts.runId, now, CRASHED);
    const orphaned = queryAllEpochs(store, opts.runId);
    execute(
      store,
      "UPDATE run_workers SET status = 'orphaned', finished_at = :now WHERE run_id = :runId " +
        "AND status IN ('starting', 'live')",
      { runId: opts.runId, now },
    );
    releaseLeaseInTx(store, control.resource, now);
    appendHistory(store, opts.runId, revision, now, {
      type: "run.recovered",
      payload: {
        generation: control.generation,
        interruptedAttemptId,
        blocked,
      },
      summary: {
        state: "running",
        queue: "parked",
        ...(blocked ? { blocked: "effectAmbiguous" } : {}),
      },
    });
    return {
      revision,
      generation: control.generation,
      interruptedAttemptId,
      blocked,
      orphanedWorkerEpochs: orphaned,
    };
  });
}

/**
 * The worker of the caller's own live claim died without a terminal message (crash, kill,
 * claim-loss exit): the same outcome as recovery, under the live claim, in one transaction:
 * the running attempt becomes `interrupted`; an external one with unsettled effects makes them
 * `ambiguous` and blocks the run `effectAmbiguous`; the run parks and the claim is released.
 * The caller records the worker epoch's outcome with `finishWorkerEpoch`.
 */
export function interruptRun(
  store: StateStore,
  claim: Claim,
  opts: { reason: string } & WorkerWriteOptions,
): { revision: number; interruptedAttemptId: string | null; blocked: boolean } {
  const runId = claimRunId(claim);
  const reason = opts.reason.slice(0, 64);
  const { revision, result } = protectedWrite(store, claim, workerTarget(runId, opts), (tx) => {
    expectState(
      tx.run,
      "interrupt",
      (r) => r.state === "running" && (r.queue_state === "starting" || r.queue_state === "running"),
    );
    const stopped = stopAtBoundary(store, runId, tx.now, CRASHED);
    releaseLeaseInTx(store, claim.resource, tx.now);
    return {
      type: "run.interrupted",
      payload: {
        reason,
        interruptedAttemptId: stopped.interruptedAttemptId,
        blocked: stopped.blocked,
      },
      summary: {
        state: "running",
        queue: "parked",
        ...(stopped.blocked ? { blocked: "effectAmbiguous" } : {}),
      },
      result: stopped,
    };
  });
  return { revision, ...result };
}

function queryAllEpochs(store: StateStore, runId: string): string[] {
  const rows = queryAll<{ worker_epoch: string }>(
    store,
    "SELECT worker_epoch FROM run_workers WHERE run_id = :runId AND status IN ('starting', 'live')",
    { runId },
  );
  return rows.map((r) => r.worker_epoch);
}

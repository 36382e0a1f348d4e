/**
 * Recovery of an expired running row (host restart, lost worker): a control claim proves the
 * old lease expired and fences its owner, then the run parks at its last durable boundary.
 */
import { acquireClaimInTx, readLease, releaseLeaseInTx, runResource } from "../claims.ts";
import { ClaimLostError } from "../errors.ts";
import { appendHistory, bumpRevision } from "../journal.ts";
import { execute, queryAll, queryOne, type StateStore, writeTransaction } from "../store.ts";
import {
  closeAttempt,
  expectState,
  markApplyingAmbiguous,
  openAttempt,
  requireRun,
  setQueueState,
} from "./common.ts";

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
    if (lease?.token_hash && (lease.expires_at ?? 0) > now) {
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
    const revision = bumpRevision(store, opts.runId, now);
    const open = openAttempt(store, opts.runId);
    let blocked = false;
    if (open) {
      closeAttempt(store, open.attempt_id, "interrupted", now, {
        code: "workerCrashed",
        message: "The worker stopped before the node finished",
      });
      if (open.effect === "external") {
        blocked = externalOutcomeUncertain(store, open.attempt_id, now);
      }
    }
    if (markApplyingAmbiguous(store, opts.runId, now) > 0) blocked = true;
    const orphaned = queryAllEpochs(store, opts.runId);
    execute(
      store,
      "UPDATE run_workers SET status = 'orphaned', finished_at = :now WHERE run_id = :runId " +
        "AND status IN ('starting', 'live')",
      { runId: opts.runId, now },
    );
    if (blocked) {
      execute(
        store,
        "UPDATE runs SET blocked_reason = 'effectAmbiguous', blocked_detail = :detail " +
          "WHERE run_id = :runId",
        {
          runId: opts.runId,
          detail: "An external action may have applied without a receipt; inspect it, then " +
            "resume or cancel the run",
        },
      );
    }
    setQueueState(store, opts.runId, "parked", now);
    releaseLeaseInTx(store, control.resource, now);
    appendHistory(store, opts.runId, revision, now, {
      type: "run.recovered",
      payload: {
        generation: control.generation,
        interruptedAttemptId: open?.attempt_id ?? null,
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
      interruptedAttemptId: open?.attempt_id ?? null,
      blocked,
      orphanedWorkerEpochs: orphaned,
    };
  });
}

/**
 * An external attempt's outcome is uncertain unless every effect it reserved has settled. One
 * with no managed effect at all gets an `ambiguous` unmanaged effect row recording that fact.
 */
function externalOutcomeUncertain(store: StateStore, attemptId: string, now: number): boolean {
  const counts = queryOne<{ total: number; unsettled: number }>(
    store,
    "SELECT COUNT(*) AS total, COALESCE(SUM(state IN ('applying', 'ambiguous')), 0) AS unsettled " +
      "FROM effects WHERE attempt_id = :attemptId",
    { attemptId },
  )!;
  if (counts.total > 0) return counts.unsettled > 0;
  execute(
    store,
    "INSERT INTO effects (effect_id, run_id, attempt_id, effect_key, effect_type, " +
      "request_fingerprint, state, created_at, updated_at) SELECT :effectId, run_id, attempt_id, " +
      "'unmanaged:' || attempt_id, 'unmanaged', 'none', 'ambiguous', :now, :now " +
      "FROM node_attempts WHERE attempt_id = :attemptId",
    { effectId: store.ids.next("effect"), attemptId, now },
  );
  return true;
}

function queryAllEpochs(store: StateStore, runId: string): string[] {
  const rows = queryAll<{ worker_epoch: string }>(
    store,
    "SELECT worker_epoch FROM run_workers WHERE run_id = :runId AND status IN ('starting', 'live')",
    { runId },
  );
  return rows.map((r) => r.worker_epoch);
}

/** Worker epochs: the terminal outcome of one worker process, recorded by the supervisor. */
import { TransitionError } from "../errors.ts";
import { appendViewerDelta, runRevisionSql } from "../journal.ts";
import { type StateStore } from "../store.ts";
import { execute, queryOne } from "../statements.ts";
import { writeTransaction, writeUnsynced } from "../transactions.ts";

export const WORKER_OUTCOMES = [
  "exited",
  "cancelled",
  "timedOut",
  "crashed",
  "claimLost",
  "orphaned",
] as const;
export type WorkerOutcome = (typeof WORKER_OUTCOMES)[number];

export interface FinishWorkerEpochOptions {
  workerEpoch: string;
  status: WorkerOutcome;
  exitCode: number | null;
  signal: string | null;
  /** Hash of the bounded diagnostic (captured stderr tail), never the text itself. */
  diagnosticHash: string | null;
  /**
   * False for the end of an epoch whose process the host keeps (the run's prepared process):
   * its commit is not synced (`writeUnsynced`). It acknowledges nothing, and lost at a power
   * loss it leaves the epoch `live` with its process gone, as a host killed before it does: the
   * next host reaps that epoch as it would then.
   */
  synced?: boolean;
}

/**
 * Records the one terminal outcome of an active (`starting` or `live`) worker epoch. It changes
 * no run state: the host decides from committed attempt and effect facts whether to park,
 * resume or fail the run. Appends a viewer delta only (the run row may already be terminal).
 */
export function finishWorkerEpoch(
  store: StateStore,
  opts: FinishWorkerEpochOptions,
): { runId: string } {
  return (opts.synced === false ? writeUnsynced : writeTransaction)(store, () => {
    const now = store.clock.now();
    const row = queryOne<{ run_id: string; status: string; revision: number }>(
      store,
      `SELECT w.run_id, w.status, ${runRevisionSql()} AS revision FROM run_workers w JOIN runs r ` +
        "ON r.run_id = w.run_id WHERE w.worker_epoch = :workerEpoch",
      { workerEpoch: opts.workerEpoch },
    );
    if (!row) {
      throw new TransitionError(
        "(unknown)",
        "finish a worker epoch of",
        `worker epoch ${opts.workerEpoch} is unknown`,
      );
    }
    if (row.status !== "starting" && row.status !== "live") {
      throw new TransitionError(
        row.run_id,
        "finish a worker epoch of",
        `worker epoch ${opts.workerEpoch} already finished (${row.status})`,
      );
    }
    execute(
      store,
      "UPDATE run_workers SET status = :status, finished_at = :now, exit_code = :exitCode, " +
        "signal = :signal, diagnostic_hash = :diagnosticHash WHERE worker_epoch = :workerEpoch",
      {
        status: opts.status,
        now,
        exitCode: opts.exitCode,
        signal: opts.signal,
        diagnosticHash: opts.diagnosticHash,
        workerEpoch: opts.workerEpoch,
      },
    );
    appendViewerDelta(store, row.run_id, row.revision, now, "worker.finished", {
      worker: opts.status,
    });
    return { runId: row.run_id };
  });
}

export interface RecordWorkerProcessOptions {
  workerEpoch: string;
  pid: number;
  /** `pid:starttime` (process-identity.ts). */
  startIdentity: string;
}

/**
 * Names the process of a `starting` worker epoch right after its spawn, before it is ready, so a
 * worker that never got ready can still be reaped by exact identity after a host restart.
 * Returns false when the epoch is no longer starting (it finished meanwhile).
 */
export function recordWorkerProcess(store: StateStore, opts: RecordWorkerProcessOptions): boolean {
  return writeTransaction(store, () =>
    execute(
      store,
      "UPDATE run_workers SET pid = :pid, start_identity = :startIdentity " +
        "WHERE worker_epoch = :workerEpoch AND status = 'starting'",
      { pid: opts.pid, startIdentity: opts.startIdentity, workerEpoch: opts.workerEpoch },
    ) === 1);
}

/**
 * The pass's first phase: deleting the ended, unreferenced runs past the retention period with
 * everything they own, one run per write transaction (a dry run counts them instead).
 */
import { queryAllArgs, queryOneArgs } from "../statements.ts";
import { countRunRows, deleteRunInTx, prunableSql, receiptsSettledSql } from "./run-deletion.ts";
import type { PassContext, PassPhase } from "./pass-context.ts";

/** Candidates listed per read. */
const PAGE = 256;
/** Walks over the candidates at most (a walk frees the parents of the runs it deleted). */
const MAX_WALKS = 10;

interface Candidate {
  runId: string;
  runNo: number;
}

export function createPrunePhase(ctx: PassContext): PassPhase {
  // The prune walks candidates in end order; a run kept because a younger ended run points at
  // it (a child) may become free once that one went, hence another walk while one helps.
  let cursor = { at: -1, rowid: 0 };
  let queue: Candidate[] = [];
  let walkDeleted = 0;
  let walks = 0;

  const nextCandidates = (): boolean => {
    const rows = queryAllArgs<{ run_id: string; run_no: number; finished_at: number; rid: number }>(
      ctx.store,
      "SELECT r.run_id, r.run_no, r.finished_at, r.rowid AS rid FROM runs r WHERE " +
        "r.finished_at IS NOT NULL AND (r.finished_at > ?1 OR (r.finished_at = ?1 AND " +
        `r.rowid > ?2)) AND ${prunableSql("?3")} ORDER BY r.finished_at, r.rowid LIMIT ?4`,
      cursor.at,
      cursor.rowid,
      ctx.cutoff,
      PAGE,
    );
    if (rows.length === 0) return false;
    const last = rows[rows.length - 1];
    cursor = { at: last.finished_at, rowid: last.rid };
    queue = rows.map((r) => ({ runId: r.run_id, runNo: r.run_no }));
    return true;
  };

  return {
    step() {
      if (queue.length === 0 && !nextCandidates()) {
        // A run a deleted run pointed at (its parent) is listed only by the next walk.
        if (!ctx.dryRun && walkDeleted > 0 && ++walks < MAX_WALKS) {
          cursor = { at: -1, rowid: 0 };
          walkDeleted = 0;
          return false;
        }
        return true;
      }
      if (ctx.dryRun) {
        countQueue(ctx, queue.splice(0));
        return false;
      }
      if (deleteNextRun(ctx, queue)) walkDeleted++;
      return false;
    },
  };
}

/**
 * One transaction: deletes the first run of `queue` that is still prunable (the others stay
 * queued); true when one went.
 *
 * One run per transaction: a commit costs its pages (written to the WAL), and a
 * run's rows lie in ~50 B-trees. Under load (18 on 2 cores, 3,000 runs) one run a commit held
 * the lock 6.9 ms at the median (a one-run host write: 4.6), ten runs 23.8 ms.
 */
function deleteNextRun(ctx: PassContext, queue: Candidate[]): boolean {
  const { report } = ctx;
  return ctx.transaction(
    "prune",
    () => {
      while (queue.length > 0) {
        const run = queue.shift()!;
        const deleted = deleteRunInTx(
          ctx.store,
          run.runId,
          ctx.cutoff,
          ctx.receiptFloor,
          report.rows,
        );
        if (deleted === null) continue; // referenced meanwhile: kept
        report.runs++;
        // The pass's first deletion tells viewers at once (the end of the phase again).
        if (report.runs === 1) ctx.signalPruned();
        ctx.pruned.epochs.push(...deleted.epochs);
        ctx.pruned.attempts.push(...deleted.attempts);
        ctx.pruned.runs.push(run.runId);
        return true;
      }
      return false;
    },
    { checkForeignKeys: false },
  );
}

/** A dry run: counts what deleting the queued runs would remove. */
function countQueue(ctx: PassContext, runs: Candidate[]): void {
  for (const run of runs) {
    // A run whose receipts are still young would be kept by the real prune.
    const settled = queryOneArgs<{ ok: number }>(
      ctx.store,
      `SELECT 1 AS ok FROM runs r WHERE r.run_id = ?1 AND ${receiptsSettledSql("?2")}`,
      run.runId,
      ctx.receiptFloor,
    );
    if (!settled) continue;
    ctx.report.runs++;
    ctx.report.bytes += countRunRows(ctx.store, run, ctx.report.rows);
  }
}

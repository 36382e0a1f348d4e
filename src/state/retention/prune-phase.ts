/**
 * The pass's first phase: deleting the ended, unreferenced runs past the retention period with
 * everything they own, one run at a time in bounded write transactions (run-marks.ts; a dry run
 * counts them instead). The runs an earlier pass marked and could not finish go first.
 */
import { queryAllArgs, queryOneArgs } from "../statements.ts";
import { countRunRows, prunableSql, receiptsSettledSql } from "./run-deletion.ts";
import {
  deleteMarkedRows,
  deleteReceiptsBeforeMark,
  type MarkedRun,
  markedRuns,
  markRunInTx,
} from "./run-marks.ts";
import type { PassContext, PassPhase } from "./pass-context.ts";
import { heldOnlyByRunsSql, RUN_REFERENCES } from "./run-references.ts";

/** Candidates listed per read. */
const PAGE = 256;

/**
 * The next page of candidates after the cursor, in end order, through the end-time index over
 * the runs past the period only: left to itself SQLite chose the state index and sorted every
 * ended run for each page (128 ms of the host's loop for the first page at 100,000 runs).
 */
export const PRUNE_CANDIDATES_SQL =
  "SELECT r.run_id, r.run_no, r.finished_at, r.rowid AS rid FROM runs r INDEXED BY " +
  "runs_by_finished WHERE r.finished_at IS NOT NULL AND (r.finished_at, r.rowid) > (?1, ?2) AND " +
  `${prunableSql("?3")} ORDER BY r.finished_at, r.rowid LIMIT ?4`;
/**
 * A dry run's later walks: the runs past the period that only other runs hold (a child, a fork);
 * those the dry run counted already would be gone by then.
 */
const HELD_BY_RUNS_SQL =
  "SELECT r.run_id, r.run_no, r.finished_at, r.rowid AS rid FROM runs r INDEXED BY " +
  "runs_by_finished WHERE r.finished_at IS NOT NULL AND (r.finished_at, r.rowid) > (?1, ?2) AND " +
  `${prunableSql("?3", heldOnlyByRunsSql())} ORDER BY r.finished_at, r.rowid LIMIT ?4`;
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
  // A dry run's runs counted so far: the references they hold would be gone.
  const { counted } = ctx;

  const nextCandidates = (): boolean => {
    const rows = queryAllArgs<{ run_id: string; run_no: number; finished_at: number; rid: number }>(
      ctx.store,
      ctx.dryRun && walks > 0 ? HELD_BY_RUNS_SQL : PRUNE_CANDIDATES_SQL,
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

  // The runs an earlier pass marked but did not finish (a crash, an idle exit): gone to every
  // reader already, their rows go first.
  const leftover: MarkedRun[] = markedRuns(ctx.store);
  let current: MarkedRun | null = null;
  if (ctx.dryRun) countQueue(ctx, leftover.splice(0), counted, false, false);

  return {
    step() {
      if (current === null && leftover.length === 0 && queue.length === 0 && !nextCandidates()) {
        // A run a deleted run pointed at (its parent) is listed only by the next walk.
        if (walkDeleted > 0 && ++walks < MAX_WALKS) {
          cursor = { at: -1, rowid: 0 };
          walkDeleted = 0;
          return false;
        }
        return true;
      }
      if (ctx.dryRun) {
        const taken = ctx.report.runs;
        countQueue(ctx, queue.splice(0), counted, walks > 0);
        walkDeleted += ctx.report.runs - taken;
        return false;
      }
      const taken = ctx.report.runs;
      current = deleteNext(ctx, current, leftover, queue);
      if (ctx.report.runs > taken) walkDeleted++;
      return false;
    },
  };
}

/**
 * One transaction: goes on with the run being deleted (a leftover one first), else marks the
 * first run of `queue` that is still prunable (the others stay queued), and deletes its rows
 * within the budget. Returns the run still being deleted, or null once it is gone (or none was).
 *
 * A commit costs its pages (written to the WAL), and a run's rows lie in ~50 B-trees: under load
 * (18 on 2 cores, 3,000 runs) one run a commit held the lock 6.9 ms at the median (a one-run
 * host write: 4.6), ten runs 23.8 ms. So one run per transaction at most, and a large one's rows
 * in as many transactions as the budget takes.
 */
function deleteNext(
  ctx: PassContext,
  current: MarkedRun | null,
  leftover: MarkedRun[],
  queue: Candidate[],
): MarkedRun | null {
  const { report } = ctx;
  // A transaction that fails ends the pass (retention-pass.ts): nothing here goes on from it.
  return ctx.transaction(
    "prune",
    () => {
      const limits = { deadline: performance.now() + ctx.budgetMs, rows: ctx.transactionRows };
      let run = current ?? leftover.shift() ?? null;
      if (run === null) {
        while (run === null && queue.length > 0) {
          const { runId } = queue[0]!;
          const { store, cutoff, receiptFloor } = ctx;
          if (!deleteReceiptsBeforeMark(store, runId, cutoff, receiptFloor, limits, report.rows)) {
            return null; // its receipts go on in the next transaction
          }
          queue.shift();
          run = markRunInTx(store, runId, cutoff, receiptFloor, report.rows);
        }
        if (run === null) return null; // each referenced meanwhile: kept
      }
      if (run !== current) {
        report.runs++;
        // The pass's first run tells viewers at once (the end of the phase again).
        if (report.runs === 1) ctx.signalPruned();
      }
      if (!deleteMarkedRows(ctx.store, run, limits, report.rows, ctx.pruned)) return run;
      ctx.pruned.runs.push(run.runId);
      return null;
    },
    { checkForeignKeys: false },
  );
}

/**
 * A dry run: counts what deleting the runs would remove, as the prune would: once each (a later
 * walk lists a run again), and a run other runs hold (`held`) only once each of them is counted.
 * `settledOnly` false: runs an earlier pass marked (gone to readers; the prune finishes them).
 */
function countQueue(
  ctx: PassContext,
  runs: Candidate[],
  counted: Set<string>,
  held: boolean,
  settledOnly = true,
): void {
  for (const run of runs) {
    if (counted.has(run.runId)) continue;
    // A run whose receipts are still young would be kept by the real prune.
    const settled = !settledOnly || queryOneArgs<{ ok: number }>(
      ctx.store,
      `SELECT 1 AS ok FROM runs r WHERE r.run_id = ?1 AND ${receiptsSettledSql("?2")}`,
      run.runId,
      ctx.receiptFloor,
    );
    if (!settled || (held && !referrersCounted(ctx, run.runId, counted))) continue;
    counted.add(run.runId);
    ctx.report.runs++;
    ctx.report.bytes += countRunRows(ctx.store, run, ctx.report.rows);
  }
}

/** Whether every run that holds a reference to `runId` is counted (would be pruned first). */
function referrersCounted(ctx: PassContext, runId: string, counted: Set<string>): boolean {
  for (const ref of RUN_REFERENCES) {
    if (ref.referrers === undefined) continue;
    const ids = queryAllArgs<{ run_id: string }>(ctx.store, ref.referrers, runId);
    if (ids.some((row) => !counted.has(row.run_id))) return false;
  }
  return true;
}

/**
 * The pass's first phase: deleting the ended, unreferenced runs past the retention period with
 * everything they own in bounded write transactions, small runs several a transaction and a large
 * one over as many as its rows take (run-marks.ts; a dry run counts them instead, within the same
 * time budget a step). The runs an earlier pass marked and could not finish go first.
 */
import { queryAllArgs, queryOneArgs } from "../statements.ts";
import { countRunRows, prunableSql, receiptsSettledSql } from "./run-deletion.ts";
import { batchable, deleteBatchRows } from "./run-batches.ts";
import {
  deleteMarkedRows,
  deleteReceiptsBeforeMark,
  type MarkedRun,
  markedRuns,
  markRunInTx,
  type TransactionLimits,
} from "./run-marks.ts";
import type { PassContext, PassPhase } from "./pass-context.ts";
import { heldOnlyByRunsSql, RUN_REFERENCES } from "./run-references.ts";
import { createPruneTempo, type PruneTempo } from "./prune-tempo.ts";

/** Candidates listed per read. */
const PAGE = 256;

/**
 * The next page of candidates after the cursor, in end order, through the end-time index over
 * the runs past the period only: left to itself SQLite chose the state index and sorted every
 * ended run for each page (128 ms of the host's loop for the first page at 100,000 runs).
 */
export const PRUNE_CANDIDATES_SQL =
  "SELECT r.run_id, r.run_no, r.definition_digest AS digest, r.finished_at, r.rowid AS rid " +
  "FROM runs r INDEXED BY runs_by_finished WHERE r.finished_at IS NOT NULL AND " +
  `(r.finished_at, r.rowid) > (?1, ?2) AND ${prunableSql("?3")} ORDER BY r.finished_at, r.rowid ` +
  "LIMIT ?4";
/**
 * A dry run's later walks: the runs past the period that only other runs hold (a child, a fork);
 * those the dry run counted already would be gone by then.
 */
const HELD_BY_RUNS_SQL =
  "SELECT r.run_id, r.run_no, r.definition_digest AS digest, r.finished_at, r.rowid AS rid " +
  "FROM runs r INDEXED BY runs_by_finished WHERE r.finished_at IS NOT NULL AND " +
  `(r.finished_at, r.rowid) > (?1, ?2) AND ${prunableSql("?3", heldOnlyByRunsSql())} ` +
  "ORDER BY r.finished_at, r.rowid LIMIT ?4";
/** Walks over the candidates at most (a walk frees the parents of the runs it deleted). */
const MAX_WALKS = 10;

interface Candidate {
  runId: string;
  runNo: number;
  /** Its definition digest (a dry run counts the runs of each). */
  digest?: string;
}

export function createPrunePhase(ctx: PassContext): PassPhase {
  // The prune walks candidates in end order; a run kept because a younger ended run points at
  // it (a child) may become free once that one went, hence another walk while one helps.
  let cursor = { at: -1, rowid: 0 };
  let queue: Candidate[] = [];
  let walkDeleted = 0;
  let walks = 0;

  const nextCandidates = (): boolean => {
    const rows = queryAllArgs<
      { run_id: string; run_no: number; digest: string; finished_at: number; rid: number }
    >(
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
    queue = rows.map((r) => ({ runId: r.run_id, runNo: r.run_no, digest: r.digest }));
    return true;
  };

  // The runs an earlier pass marked but did not finish (a crash, an idle exit): gone to every
  // reader already, their rows go first.
  const leftover: MarkedRun[] = markedRuns(ctx.store);
  /** The runs being deleted one at a time (deleteNext). */
  const going: MarkedRun[] = [];
  const tempo = createPruneTempo(ctx);
  // A dry run counts them at once (a pass leaves the runs it was deleting one at a time: a batch
  // that stopped, a large run).
  if (ctx.dryRun) { for (const run of leftover.splice(0)) countRun(ctx, run, false, false); }

  return {
    step() {
      if (going.length === 0 && leftover.length === 0 && queue.length === 0 && !nextCandidates()) {
        // A run a deleted run pointed at (its parent) is listed only by the next walk.
        if (walkDeleted > 0 && ++walks < MAX_WALKS) {
          cursor = { at: -1, rowid: 0 };
          walkDeleted = 0;
          return false;
        }
        return true;
      }
      if (ctx.dryRun) {
        // Runs counted within the step budget, like a transaction's (a run's count is ~25 reads).
        const taken = ctx.report.runs;
        const started = performance.now();
        do countRun(ctx, queue.shift()!, walks > 0); while (
          queue.length > 0 && performance.now() - started < ctx.budgetMs
        );
        walkDeleted += ctx.report.runs - taken;
        return false;
      }
      const taken = ctx.report.runs;
      deleteNext(ctx, tempo, going, leftover, queue);
      walkDeleted += ctx.report.runs - taken;
      return false;
    },
  };
}

/**
 * One transaction: goes on with the runs being deleted one at a time (`going`: a run an earlier
 * transaction began, a large run, a batch that met more rows than its bound; then the leftover
 * marks of an earlier pass), else marks a batch of the first runs of `queue` that are still
 * prunable (the others stay queued) and deletes them together; then more the same way while the
 * tempo allows. `going` keeps the runs still being deleted when it ends.
 */
function deleteNext(
  ctx: PassContext,
  tempo: PruneTempo,
  going: MarkedRun[],
  leftover: MarkedRun[],
  queue: Candidate[],
): void {
  const { report, store } = ctx;
  const maxRuns = tempo.maxRuns();
  const clock = ctx.budgetClock;
  // Whole runs the transaction deleted in batches, none of them begun or left for another.
  let whole = 0;
  let partial = going.length > 0;
  // A transaction that fails ends the pass (retention-pass.ts): nothing here goes on from it.
  ctx.transaction(
    "prune",
    () => {
      const opened = clock();
      const limits: TransactionLimits = {
        deadline: opened + ctx.budgetMs,
        clock,
        rowsLeft: ctx.transactionRows,
      };
      let taken = 0;
      for (;;) {
        if (going.length === 0 && leftover.length > 0) {
          // An earlier pass's mark: a run of this pass's report from here.
          going.push(leftover.shift()!);
          report.runs++;
          partial = true;
        }
        const run = going[0];
        if (run !== undefined) {
          if (!deleteMarkedRows(store, run, limits, report.rows, ctx.pruned)) return;
          ctx.pruned.runs.push(run.runId);
          going.shift();
          taken++;
        } else {
          const batch: MarkedRun[] = [];
          let receiptsLeft = false;
          while (queue.length > 0 && taken + batch.length < maxRuns) {
            // Receipts deleted before a mark take rows and time: a batch takes no more runs once
            // either is spent (its statements would meet the bound at once, its runs go slowly).
            if (
              batch.length > 0 &&
              (limits.rowsLeft <= 0 || clock() >= limits.deadline ||
                !tempo.fits(clock() - opened, batch.length))
            ) break;
            const { runId } = queue[0]!;
            const { cutoff, receiptFloor } = ctx;
            const started = clock();
            if (
              !deleteReceiptsBeforeMark(store, runId, cutoff, receiptFloor, limits, report.rows)
            ) {
              receiptsLeft = true; // its receipts go on in the next transaction
              break;
            }
            queue.shift();
            const marked = markRunInTx(store, runId, cutoff, receiptFloor, report.rows);
            if (marked === null) continue; // referenced meanwhile: kept
            report.runs++;
            // The pass's first run tells viewers at once (the end of the phase again).
            if (report.runs === 1) ctx.signalPruned();
            if (!batchable(store, marked)) {
              // Too many attempts for a batch: deleted alone, after the batch.
              going.push(marked);
              partial = true;
              break;
            }
            tempo.marked(clock() - started);
            batch.push(marked);
          }
          if (receiptsLeft) partial = true;
          if (batch.length > 0) {
            const started = clock();
            if (deleteBatchRows(store, batch, limits, report.rows, ctx.pruned)) {
              for (const done of batch) ctx.pruned.runs.push(done.runId);
              const now = clock();
              tempo.deleted(batch.length, now - started, now - opened);
              whole += batch.length;
            } else {
              // A table held more rows than the transaction's bound, or the time budget ended:
              // one at a time from there.
              partial = true;
              going.unshift(...batch);
              // Out of time: what it took so far is the least a batch takes, so the next one
              // takes fewer runs (a tempo that saw no whole batch would take as many again).
              if (limits.rowsLeft > 0) {
                const now = clock();
                tempo.deleted(batch.length, now - started, now - opened, true);
              }
            }
            taken += batch.length;
          }
          // None left, each referenced meanwhile (kept), or receipts to go on with next time.
          if (receiptsLeft || (batch.length === 0 && going.length === 0)) return;
        }
        if (
          taken >= maxRuns || limits.rowsLeft <= 0 || !tempo.fits(clock() - opened, 0)
        ) return;
      }
    },
    { checkForeignKeys: false },
  );
  // Receipts deleted before a mark write frames of no run: only whole runs tell a run's frames.
  if (!partial && whole > 0) tempo.committed(whole);
}

/**
 * A dry run: counts what deleting the run would remove, as the prune would: once (a later walk
 * lists a run again), and a run other runs hold (`held`) only once each of them is counted.
 * `settledOnly` false: a run an earlier pass marked (gone to readers; the prune finishes it).
 */
function countRun(ctx: PassContext, run: Candidate, held: boolean, settledOnly = true): void {
  const { counted } = ctx;
  if (counted.has(run.runId)) return;
  // A run whose receipts are still young would be kept by the real prune.
  const settled = !settledOnly || queryOneArgs<{ ok: number }>(
    ctx.store,
    `SELECT 1 AS ok FROM runs r WHERE r.run_id = ?1 AND ${receiptsSettledSql("?2")}`,
    run.runId,
    ctx.receiptFloor,
  );
  if (!settled || (held && !referrersCounted(ctx, run.runId, counted))) return;
  counted.add(run.runId);
  if (run.digest !== undefined) {
    ctx.countedByDigest.set(run.digest, (ctx.countedByDigest.get(run.digest) ?? 0) + 1);
  }
  ctx.report.runs++;
  ctx.report.bytes += countRunRows(ctx.store, run, ctx.report.rows);
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

/**
 * One retention pass over the state database, in short write transactions the caller runs one
 * at a time (`step()`), so the host serves commands between them and never holds the write lock
 * for long: first the prune (ended, unreferenced runs past the retention period and everything
 * they own, one run per transaction), then the definition snapshots no run uses, client receipts
 * of no run, then compaction of ended runs, the viewer feed's trim, and last the incremental
 * vacuum that gives the freed pages back to the file. A dry run only counts (reads).
 */
import { statSync } from "node:fs";
import { queryAllArgs, queryOneArgs } from "../statements.ts";
import type { StateStore } from "../store.ts";
import { writeTransaction } from "../transactions.ts";
import { appendFeedDelta } from "../journal.ts";
import {
  compactRunInTx,
  countRunlessReceipts,
  type EndedRun,
  listUncompactedRuns,
  pruneRunlessReceiptsInTx,
  trimViewerFeedInTx,
} from "./compaction.ts";
import {
  countRunRows,
  deleteRunInTx,
  prunableSql,
  receiptsSettledSql,
  type TableCounts,
} from "./run-deletion.ts";
import { countUnusedDefinitions, pruneUnusedDefinitionsInTx } from "./unused-definitions.ts";

export const DAY_MS = 24 * 3600_000;
/** The viewer delta (of no run) that says a pass deleted runs: viewers reload. */
export const RUNS_PRUNED_DELTA = "runs.pruned";
/** The retention period when neither config.json nor the command names one. */
export const DEFAULT_KEEP_DAYS = 30;
/**
 * How long after its last client receipt a run is kept at least, and how long after its end
 * before it is compacted: far past any client's retry deadline (60 s, plus one 5 s final try)
 * and a worker's last message, so no retry can find its receipt gone.
 */
export const RETRY_WINDOW_MS = 3600_000;
/** Viewer deltas are kept this long (a viewer further behind reloads). */
export const FEED_WINDOW_MS = 3600_000;
/** A write transaction of the pass stops taking more work once it has run this long. */
export const STEP_BUDGET_MS = 4;
/** Pages one incremental vacuum step returns to the file (1 MiB of 4 KiB pages). */
const VACUUM_PAGES = 256;
const PAGE = 256;

export interface RetentionOptions {
  keepDays: number;
  dryRun?: boolean;
  /** Time budget of one write transaction (ms). */
  stepBudgetMs?: number;
  /** Told each write transaction's phase and length, BEGIN to the end of COMMIT (the benchmark). */
  onTransaction?: (phase: string, ms: number) => void;
}

export interface RetentionReport {
  dryRun: boolean;
  keepDays: number;
  /** Runs that ended before this time (epoch ms) were due. */
  cutoff: number;
  /** Ended runs deleted (would be, in a dry run). */
  runs: number;
  /** Rows deleted (would be) per table. */
  rows: TableCounts;
  /** Ended runs compacted; viewer deltas trimmed. */
  compactedRuns: number;
  trimmedDeltas: number;
  /** Bytes the deleted rows held (pages no longer used); a dry run's is an estimate. */
  bytes: number;
  fileBytesBefore: number;
  fileBytesAfter: number;
  transactions: number;
  /** The longest write transaction of the pass, from BEGIN to the end of COMMIT (ms). */
  longestLockMs: number;
  /** The longest COMMIT alone (its WAL write and fsync), ms. */
  longestCommitMs: number;
  /** The same per phase (prune, receipts, compact, feed, vacuum). */
  longestLockMsByPhase: Record<string, number>;
}

type Phase = "prune" | "definitions" | "receipts" | "compact" | "feed" | "vacuum" | "done";

export interface RetentionPass {
  readonly report: RetentionReport;
  /** Worker epochs of the deleted runs (their captured output files can go). */
  readonly prunedEpochs: string[];
  /** The deleted runs (their headless Pi session directories can go). */
  readonly prunedRuns: string[];
  /** Runs one short write transaction; false once the pass is complete. */
  step(): boolean;
}

/** Starts a pass at the store clock's now. */
export function createRetentionPass(store: StateStore, options: RetentionOptions): RetentionPass {
  const now = store.clock.now();
  const dryRun = options.dryRun ?? false;
  const budget = options.stepBudgetMs ?? STEP_BUDGET_MS;
  const cutoff = now - options.keepDays * DAY_MS;
  const receiptFloor = now - RETRY_WINDOW_MS;
  // The file's size counts once the WAL is copied back into it (a passive checkpoint: it waits
  // for no reader and holds no write lock).
  if (!dryRun) store.db.exec("PRAGMA wal_checkpoint(PASSIVE)");
  const usedBefore = usedPages(store);
  const report: RetentionReport = {
    dryRun,
    keepDays: options.keepDays,
    cutoff,
    runs: 0,
    rows: {},
    compactedRuns: 0,
    trimmedDeltas: 0,
    bytes: 0,
    fileBytesBefore: fileBytes(store),
    fileBytesAfter: 0,
    transactions: 0,
    longestLockMs: 0,
    longestCommitMs: 0,
    longestLockMsByPhase: {},
  };
  const prunedEpochs: string[] = [];
  const prunedRuns: string[] = [];
  let phase: Phase = "prune";
  // The prune walks candidates in end order; a run kept because a younger ended run points at
  // it (a child) may become free once that one went, hence another walk while one helps.
  let cursor = { at: -1, rowid: 0 };
  let queue: { runId: string; runNo: number }[] = [];
  let walkDeleted = 0;
  let walks = 0;
  let compactQueue: EndedRun[] = [];
  // Runs deleted when viewers were last told (a `runs.pruned` delta makes them reload): in the
  // pass's first deleting transaction, and once more after the last.
  let signalledRuns = 0;
  const signalPruned = (): void => {
    appendFeedDelta(store, RUNS_PRUNED_DELTA, now);
    signalledRuns = report.runs;
  };

  const timed = <T>(fn: () => T): T => {
    const started = performance.now();
    let worked = started;
    try {
      return writeTransaction(store, () => {
        const result = fn();
        worked = performance.now();
        return result;
      });
    } finally {
      const ended = performance.now();
      const ms = ended - started;
      report.transactions++;
      report.longestLockMs = Math.max(report.longestLockMs, ms);
      if (worked > started) {
        report.longestCommitMs = Math.max(report.longestCommitMs, ended - worked);
      }
      const byPhase = report.longestLockMsByPhase;
      byPhase[phase] = Math.max(byPhase[phase] ?? 0, ms);
      options.onTransaction?.(phase, ms);
    }
  };

  const nextCandidates = (): boolean => {
    const rows = queryAllArgs<{ run_id: string; run_no: number; finished_at: number; rid: number }>(
      store,
      "SELECT r.run_id, r.run_no, r.finished_at, r.rowid AS rid FROM runs r WHERE " +
        "r.finished_at IS NOT NULL AND (r.finished_at > ?1 OR (r.finished_at = ?1 AND " +
        `r.rowid > ?2)) AND ${prunableSql("?3")} ORDER BY r.finished_at, r.rowid LIMIT ?4`,
      cursor.at,
      cursor.rowid,
      cutoff,
      PAGE,
    );
    if (rows.length === 0) return false;
    const last = rows[rows.length - 1];
    cursor = { at: last.finished_at, rowid: last.rid };
    queue = rows.map((r) => ({ runId: r.run_id, runNo: r.run_no }));
    return true;
  };

  const pruneStep = (): void => {
    if (queue.length === 0 && !nextCandidates()) {
      // A run a deleted run pointed at (its parent) is listed only by the next walk.
      if (!dryRun && walkDeleted > 0 && ++walks < 10) {
        cursor = { at: -1, rowid: 0 };
        walkDeleted = 0;
        return;
      }
      phase = "definitions";
      return;
    }
    if (dryRun) {
      for (const run of queue.splice(0)) {
        // A run whose receipts are still young would be kept by the real prune.
        const settled = queryOneArgs<{ ok: number }>(
          store,
          `SELECT 1 AS ok FROM runs r WHERE r.run_id = ?1 AND ${receiptsSettledSql("?2")}`,
          run.runId,
          receiptFloor,
        );
        if (!settled) continue;
        report.runs++;
        report.bytes += countRunRows(store, run, report.rows);
      }
      return;
    }
    // One run per transaction: a commit costs its pages (written to the WAL and synced), and a
    // run's rows lie in ~50 B-trees. Under load (18 on 2 cores, 3,000 runs) one run a commit
    // held the lock 6.9 ms at the median (a one-run host write: 4.6), ten runs 23.8 ms.
    asPruneTransaction(store, () =>
      timed(() => {
        for (;;) {
          const run = queue.shift()!;
          const epochs = deleteRunInTx(store, run.runId, cutoff, receiptFloor, report.rows);
          if (epochs !== null) {
            report.runs++;
            // The pass's first deletion tells viewers at once (the end of the phase again).
            if (report.runs === 1) signalPruned();
            walkDeleted++;
            prunedEpochs.push(...epochs);
            prunedRuns.push(run.runId);
            return;
          }
          if (queue.length === 0) return; // all referenced meanwhile: kept
        }
      }));
  };

  const definitionsStep = (): void => {
    if (dryRun) {
      const unused = countUnusedDefinitions(store, cutoff, receiptFloor);
      if (unused.n > 0) report.rows.workflow_definitions = unused.n;
      report.bytes += unused.bytes;
      phase = "receipts";
      return;
    }
    const done = timed(() => {
      if (report.runs > signalledRuns) signalPruned();
      return withinBudget(() => pruneUnusedDefinitionsInTx(store, 20), 20, (n) => {
        if (n > 0) {
          report.rows.workflow_definitions = (report.rows.workflow_definitions ?? 0) + n;
        }
      });
    });
    if (done) phase = "receipts";
  };

  const receiptsStep = (): void => {
    const before = Math.min(cutoff, receiptFloor);
    if (dryRun) {
      const n = countRunlessReceipts(store, before);
      if (n > 0) report.rows.host_commands = (report.rows.host_commands ?? 0) + n;
      report.bytes += n * 300;
      phase = "compact";
      return;
    }
    const done = timed(() =>
      withinBudget(() => pruneRunlessReceiptsInTx(store, before, 100), 100, (n) => {
        if (n > 0) report.rows.host_commands = (report.rows.host_commands ?? 0) + n;
      })
    );
    if (done) phase = "compact";
  };

  const compactStep = (): void => {
    if (dryRun) {
      phase = "feed";
      return;
    }
    if (compactQueue.length === 0) {
      compactQueue = listUncompactedRuns(store, receiptFloor, PAGE);
      if (compactQueue.length === 0) {
        phase = "feed";
        return;
      }
    }
    timed(() => {
      const started = performance.now();
      do {
        compactRunInTx(store, compactQueue.shift()!);
        report.compactedRuns++;
      } while (compactQueue.length > 0 && performance.now() - started < budget);
    });
  };

  const feedStep = (): void => {
    if (dryRun) {
      phase = "vacuum";
      return;
    }
    const done = timed(() =>
      withinBudget(() => trimViewerFeedInTx(store, now - FEED_WINDOW_MS, 200), 200, (n) => {
        report.trimmedDeltas += n;
      })
    );
    if (done) {
      report.bytes = Math.max(0, usedBefore - usedPages(store)) * pageSize(store);
      phase = "vacuum";
    }
  };

  const vacuumStep = (): void => {
    if (dryRun || freePages(store) === 0) {
      if (!dryRun) store.db.exec("PRAGMA wal_checkpoint(PASSIVE)");
      report.fileBytesAfter = fileBytes(store);
      phase = "done";
      return;
    }
    timed(() => store.db.exec(`PRAGMA incremental_vacuum(${VACUUM_PAGES})`));
  };

  /**
   * Repeats `chunk` (which removes up to `size` rows) inside one transaction while the budget
   * lasts; true once a chunk came back short (nothing more to do).
   */
  const withinBudget = (chunk: () => number, size: number, add: (n: number) => void): boolean => {
    const started = performance.now();
    for (;;) {
      const n = chunk();
      add(n);
      if (n < size) return true;
      if (performance.now() - started >= budget) return false;
    }
  };

  const steps: Record<Exclude<Phase, "done">, () => void> = {
    prune: pruneStep,
    definitions: definitionsStep,
    receipts: receiptsStep,
    compact: compactStep,
    feed: feedStep,
    vacuum: vacuumStep,
  };
  return {
    report,
    prunedEpochs,
    prunedRuns,
    step() {
      if (phase !== "done") steps[phase]();
      return phase !== "done";
    },
  };
}

/** Runs a whole pass at once (tests, the benchmark); the host steps it between commands. */
export function runRetentionPass(store: StateStore, options: RetentionOptions): RetentionPass {
  const pass = createRetentionPass(store, options);
  while (pass.step()) { /* next step */ }
  return pass;
}

/**
 * Runs a prune transaction with SQLite's foreign-key enforcement off and its commit not synced.
 *
 * Foreign keys: deleting a run (or an attempt) makes SQLite look for rows still pointing at it
 * in every referencing table, and the ones without an index on the referencing column
 * (events.run_id, node_updates.attempt_id, node_attempts.adopted_from_attempt_id,
 * runs.forked_from_attempt_id, ...) are scanned whole: 90 ms per run at 3,000 runs, growing with
 * the history. An index on each would cost every event and update append a B-tree write. The
 * prune needs none of those checks: it deletes a run only when nothing outside it points at it
 * (run-references.ts, checked in the same transaction) and every row the run owns with it,
 * children first (RUN_OWNED); doctor's `danglingReference` checks `foreign_key_check`.
 *
 * Sync: the commit's fsync was most of a prune transaction's lock hold on a loaded disk. At
 * `synchronous=NORMAL` a WAL commit survives a crash of the process, and the next synced commit
 * (any host write between two steps, at the latest the pass's next phase, before the host
 * removes the pruned runs' files) syncs it with its own: only a power loss before then can take
 * the newest deletions back, which leaves those runs whole for the next pass.
 *
 * Both pragmas only take effect outside a transaction, so inside one (a caller's) the host's
 * settings simply stay.
 */
function asPruneTransaction<T>(store: StateStore, fn: () => T): T {
  if (store.db.isTransaction) return fn();
  const sync = pragmaNumber(store, "synchronous");
  store.db.exec("PRAGMA foreign_keys = OFF");
  store.db.exec("PRAGMA synchronous = NORMAL");
  try {
    return fn();
  } finally {
    store.db.exec(`PRAGMA synchronous = ${sync}`);
    store.db.exec("PRAGMA foreign_keys = ON");
  }
}

function pragmaNumber(store: StateStore, name: string): number {
  const row = queryOneArgs<Record<string, number>>(store, `PRAGMA ${name}`);
  return row ? Number(Object.values(row)[0]) : 0;
}

function freePages(store: StateStore): number {
  return pragmaNumber(store, "freelist_count");
}

function pageSize(store: StateStore): number {
  return pragmaNumber(store, "page_size");
}

function usedPages(store: StateStore): number {
  return pragmaNumber(store, "page_count") - freePages(store);
}

function fileBytes(store: StateStore): number {
  try {
    return statSync(store.path).size;
  } catch {
    return 0;
  }
}

/**
 * What the phases of one retention pass share: its clock reading and limits, the report it
 * fills, the runs it deleted, and how it runs (and times) each of its write transactions.
 */
import type { StateStore } from "../store.ts";
import { writeTransaction } from "../transactions.ts";
import { appendFeedDelta } from "../journal.ts";
import type { TableCounts } from "./run-deletion.ts";
import { createPassCheckpoints, type PassCheckpoints } from "./pass-checkpoints.ts";
import { asPassTransaction } from "./pass-transaction.ts";
import { TRANSACTION_FRAMES, TRANSACTION_ROWS, TRANSACTION_RUNS } from "./run-marks.ts";
import type { CheckpointRunner } from "../checkpoint-runner.ts";
import { DAY_MS, RETRY_WINDOW_MS, RUNS_PRUNED_DELTA, STEP_BUDGET_MS } from "./retention-policy.ts";

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

/**
 * What deleted runs leave outside the database: the host removes these files once the deletion
 * is durable (a power loss could otherwise bring back a run whose files are gone).
 */
export interface PrunedFiles {
  /** Worker epochs (their captured output files). */
  readonly epochs: readonly string[];
  /** Attempts (their step output files). */
  readonly attempts: readonly string[];
  /** Runs (their headless Pi session directories). */
  readonly runs: readonly string[];
}

/** The lists a pass fills. */
interface PrunedLists {
  epochs: string[];
  attempts: string[];
  runs: string[];
}

const noFiles = (): PrunedLists => ({ epochs: [], attempts: [], runs: [] });
const NO_FILES: PrunedFiles = { epochs: [], attempts: [], runs: [] };

export interface PassSettings {
  keepDays: number;
  dryRun?: boolean;
  /** Time budget of one write transaction (ms). */
  stepBudgetMs?: number;
  /** The clock a prune transaction's budget and tempo read (ms; performance.now, else tests'). */
  budgetClock?: () => number;
  /**
   * Rows one prune transaction deletes at most (default `TRANSACTION_ROWS`, run-marks.ts; the
   * benchmark lifts it with the budget to delete a run in one transaction, as before batches).
   */
  transactionRows?: number;
  /**
   * Runs one prune transaction takes at most (default `TRANSACTION_RUNS`; the budgets usually
   * stop it sooner: prune-phase.ts). 1: a run a transaction, as before (the benchmark's baseline).
   */
  transactionRuns?: number;
  /** WAL frames one prune transaction writes at most, as estimated (default `TRANSACTION_FRAMES`). */
  transactionFrames?: number;
  /**
   * Told each write transaction's phase, its length (BEGIN to the end of COMMIT) and its COMMIT's
   * alone (the benchmark).
   */
  onTransaction?: (phase: string, ms: number, commitMs: number) => void;
  /** Told just before each write transaction's BEGIN, outside its timed span (the benchmark). */
  onTransactionStart?: (phase: string) => void;
  /** WAL frames between two of the pass's checkpoints (pass-checkpoints.ts). */
  checkpointFrames?: number;
  /**
   * Told each of the pass's checkpoints' length, WAL frames and the host thread's part of it
   * (the benchmark).
   */
  onCheckpoint?: (ms: number, frames: number, threadMs: number) => void;
  /** Runs the pass's checkpoints off the host's thread (the host's); else they run in line. */
  checkpointRunner?: CheckpointRunner;
}

export interface PassContext {
  readonly store: StateStore;
  /** The store clock's now when the pass started. */
  readonly now: number;
  readonly dryRun: boolean;
  readonly budgetMs: number;
  readonly budgetClock: () => number;
  /** Rows one prune transaction deletes at most. */
  readonly transactionRows: number;
  /** Runs one prune transaction takes at most. */
  readonly transactionRuns: number;
  /** WAL frames one prune transaction writes at most, as estimated. */
  readonly transactionFrames: number;
  /** Runs that ended before this are due. */
  readonly cutoff: number;
  /** A run with a client receipt completed at or after this is kept (a retry may come). */
  readonly receiptFloor: number;
  readonly report: RetentionReport;
  /** What the runs deleted since the pass last made its commits durable leave on disk. */
  readonly pruned: PrunedLists;
  /** A dry run's runs that the prune would delete, as its prune phase counts them. */
  readonly counted: Set<string>;
  /** The same runs per definition digest (the snapshots they alone name would go after them). */
  readonly countedByDigest: Map<string, number>;
  /**
   * Hands the files of the runs deleted since the last time over to `takePruned`: call it once
   * their deletion is durable (after one of the pass's checkpoints, which end with an fsync of
   * the WAL).
   */
  makeDurable(): void;
  /** The files of the deleted runs whose deletion is durable, since the last take. */
  takePruned(): PrunedFiles;
  /** The pass's own WAL checkpoints, between its transactions. */
  readonly checkpoints: PassCheckpoints;
  /**
   * Runs `fn` as one write transaction of `phase` (its commit not synced: pass-transaction.ts),
   * into the report's lock figures. `checkForeignKeys: false` for a prune's deletions.
   */
  transaction<T>(phase: string, fn: () => T, options?: { checkForeignKeys: boolean }): T;
  /** Tells viewers (one delta of no run) that runs were deleted; inside a transaction. */
  signalPruned(): void;
  /** Runs deleted that viewers have not been told of yet. */
  unsignalledRuns(): number;
}

export function createPassContext(
  store: StateStore,
  settings: PassSettings,
  fileBytesBefore: number,
): PassContext {
  const now = store.clock.now();
  const dryRun = settings.dryRun ?? false;
  const cutoff = now - settings.keepDays * DAY_MS;
  const report: RetentionReport = {
    dryRun,
    keepDays: settings.keepDays,
    cutoff,
    runs: 0,
    rows: {},
    compactedRuns: 0,
    trimmedDeltas: 0,
    bytes: 0,
    fileBytesBefore,
    fileBytesAfter: 0,
    transactions: 0,
    longestLockMs: 0,
    longestCommitMs: 0,
    longestLockMsByPhase: {},
  };
  let signalledRuns = 0;
  const checkpoints = createPassCheckpoints(store, settings);
  // The lists are handed over at each checkpoint, not kept for the whole pass: held to its end,
  // 100,000 runs' ids (~700,000 strings) grew the collector's old generation, and a collection
  // of it pauses the thread wherever it lands, most often inside a transaction (where the pass
  // allocates most).
  const pruned = noFiles();
  let durable = noFiles();
  return {
    store,
    now,
    dryRun,
    budgetMs: settings.stepBudgetMs ?? STEP_BUDGET_MS,
    budgetClock: settings.budgetClock ?? (() => performance.now()),
    transactionRows: settings.transactionRows ?? TRANSACTION_ROWS,
    transactionRuns: settings.transactionRuns ?? TRANSACTION_RUNS,
    transactionFrames: settings.transactionFrames ?? TRANSACTION_FRAMES,
    cutoff,
    receiptFloor: now - RETRY_WINDOW_MS,
    report,
    pruned,
    counted: new Set(),
    countedByDigest: new Map(),
    makeDurable() {
      if (isEmpty(pruned)) return;
      moveAll(pruned.epochs, durable.epochs);
      moveAll(pruned.attempts, durable.attempts);
      moveAll(pruned.runs, durable.runs);
    },
    takePruned() {
      if (isEmpty(durable)) return NO_FILES;
      const taken = durable;
      durable = noFiles();
      return taken;
    },
    checkpoints,
    transaction: (phase, fn, options = { checkForeignKeys: true }) =>
      checkpoints.around(() =>
        asPassTransaction(
          store,
          options,
          () => timedTransaction(store, report, phase, fn, settings),
        )
      ),
    signalPruned() {
      appendFeedDelta(store, RUNS_PRUNED_DELTA, now);
      signalledRuns = report.runs;
    },
    unsignalledRuns: () => report.runs - signalledRuns,
  };
}

function isEmpty(lists: PrunedLists): boolean {
  return lists.runs.length === 0 && lists.epochs.length === 0 && lists.attempts.length === 0;
}

function moveAll(from: string[], to: string[]): void {
  for (const item of from) to.push(item);
  from.length = 0;
}

function timedTransaction<T>(
  store: StateStore,
  report: RetentionReport,
  phase: string,
  fn: () => T,
  hooks: Pick<PassSettings, "onTransaction" | "onTransactionStart">,
): T {
  hooks.onTransactionStart?.(phase);
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
    const commitMs = worked > started ? ended - worked : 0;
    report.transactions++;
    report.longestLockMs = Math.max(report.longestLockMs, ms);
    report.longestCommitMs = Math.max(report.longestCommitMs, commitMs);
    const byPhase = report.longestLockMsByPhase;
    byPhase[phase] = Math.max(byPhase[phase] ?? 0, ms);
    hooks.onTransaction?.(phase, ms, commitMs);
  }
}

/**
 * Repeats `chunk` (which removes up to `size` rows) inside one transaction while the budget
 * lasts; true once a chunk came back short (nothing more to do).
 */
export function withinBudget(
  ctx: PassContext,
  chunk: () => number,
  size: number,
  add: (n: number) => void,
): boolean {
  const started = performance.now();
  for (;;) {
    const n = chunk();
    add(n);
    if (n < size) return true;
    if (performance.now() - started >= ctx.budgetMs) return false;
  }
}

/** One phase of a pass: `step()` does at most one write transaction; true once it is done. */
export interface PassPhase {
  step(): boolean;
}

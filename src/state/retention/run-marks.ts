/**
 * Deleting an ended run in bounded transactions. The first one checks the run is still prunable,
 * marks it (`run_prunes`, durable) and deletes its `runs` row with the rows found from outside
 * the run (RUN_OWNED's `withMark`): from that commit on the run is gone to every reader (they all
 * find a run through its row), so nothing can resume, answer, fork or reference it, and none of
 * its rows can change again. The rest goes in batches of rows, children first, within the pass's
 * time budget, as many transactions as it takes; the mark goes with the last row. A small run
 * goes whole in its first transaction, with the other runs of its batch (run-batches.ts: one
 * statement a table for all of them); a run with thousands of attempts or events takes several.
 * A crash leaves the mark: the next pass finishes the run first (`markedRuns`), and doctor takes
 * a marked run's remaining rows for what they are (invariants.ts).
 */
import type { SQLInputValue } from "node:sqlite";
import { executeArgs, queryAllArgs, queryOneArgs } from "../statements.ts";
import type { StateStore } from "../store.ts";
import {
  addRunRows,
  ATTEMPTS,
  prunableSql,
  receiptsSettledSql,
  RUN_OWNED,
  type TableCounts,
} from "./run-deletion.ts";
import { crashPoint } from "../../base/crash-point.ts";

/** Rows one batch statement deletes at most (the budget is checked between batches). */
export const BATCH_ROWS = 64;
/** Rows one transaction deletes at most, however fast the batches go. */
export const TRANSACTION_ROWS = 2_048;
/** Runs one transaction deletes at most, however fast they go (prune-phase.ts). */
export const TRANSACTION_RUNS = 64;
/**
 * WAL frames one prune transaction writes at most, as estimated from the frames its runs wrote
 * (prune-phase.ts; 2 MiB of 4 KiB pages): its COMMIT writes them all under the lock, and the
 * pass's checkpoint interval (pass-checkpoints.ts) holds several such transactions.
 */
export const TRANSACTION_FRAMES = 512;
/**
 * Attempts a batch of a table that names attempts (effects, decisions, interactive requests and
 * their children) looks at: finding those rows through all of a run's attempts costs ~1 ms per
 * 1,000 attempts a statement, so they go a window of the run's attempts at a time.
 */
export const ATTEMPT_WINDOW = 256;

/**
 * A run being deleted: its mark, the first table of RUN_OWNED that may still hold rows, and in a
 * table that names attempts, the sequence number of the last attempt whose rows there went.
 */
export interface MarkedRun {
  readonly runId: string;
  readonly runNo: number;
  table: number;
  attemptsAfter: number;
}

/**
 * What is left of one write transaction's bounds, shared by the runs it deletes: each batch
 * takes its rows off `rowsLeft`; `deadline` is on `clock`'s time.
 */
export interface TransactionLimits {
  readonly deadline: number;
  /** The clock `deadline` is on (the pass's `budgetClock`). */
  readonly clock: () => number;
  rowsLeft: number;
}

/** The files named by the rows a deletion removed (their owner removes them once durable). */
export interface DeletedNames {
  epochs: string[];
  attempts: string[];
}

/** The runs marked by an earlier pass that a crash or an exit cut short. */
export function markedRuns(store: StateStore): MarkedRun[] {
  return queryAllArgs<{ run_id: string; run_no: number }>(
    store,
    "SELECT run_id, run_no FROM run_prunes ORDER BY run_no",
  ).map((row) => ({ runId: row.run_id, runNo: row.run_no, table: 0, attemptsAfter: 0 }));
}

/**
 * Marks the run and deletes its row and the rows found from outside it, when it is still
 * prunable (checked here, inside the caller's write transaction: a reference made since it was
 * listed keeps it). Null when it was kept.
 */
export function markRunInTx(
  store: StateStore,
  runId: string,
  cutoff: number,
  receiptFloor: number,
  counts: TableCounts,
): MarkedRun | null {
  const sql = markSql();
  const run = queryOneArgs<{ run_no: number }>(store, sql.prunable, runId, cutoff, receiptFloor);
  if (!run) return null;
  executeArgs(store, sql.mark, runId, run.run_no);
  for (const owned of sql.withMark) {
    const n = executeArgs(store, owned.sql, runId);
    addRunRows(counts, owned.table, n);
  }
  return { runId, runNo: run.run_no, table: 0, attemptsAfter: 0 };
}

/**
 * Before a run is marked: its client receipts (a few per interactive step: thousands for a long
 * run) go in batches within `limits`, so the mark's transaction stays bounded. Only while the run
 * is still prunable: its receipts are then all past the retry window (`receiptFloor`), so a
 * client can no longer retry them, with the run there or gone. True when none is left (or the
 * run is kept: its mark then refuses it); false when the limits ended the batches first.
 */
export function deleteReceiptsBeforeMark(
  store: StateStore,
  runId: string,
  cutoff: number,
  receiptFloor: number,
  limits: TransactionLimits,
  counts: TableCounts,
): boolean {
  const sql = markSql();
  if (!queryOneArgs(store, sql.prunable, runId, cutoff, receiptFloor)) return true;
  for (;;) {
    const n = executeArgs(store, sql.receipts, runId, BATCH_ROWS);
    addRunRows(counts, "host_commands", n);
    limits.rowsLeft -= n;
    if (n < BATCH_ROWS) return true;
    if (limits.rowsLeft <= 0 || limits.clock() >= limits.deadline) return false;
  }
}

/**
 * Deletes the marked run's next rows in batches, children first, until `limits` end (one
 * transaction: the caller's); the mark goes with the last of them. True once the run is gone
 * whole.
 */
export function deleteMarkedRows(
  store: StateStore,
  run: MarkedRun,
  limits: TransactionLimits,
  counts: TableCounts,
  names: DeletedNames,
): boolean {
  const batches = batchSql();
  while (run.table < batches.length) {
    const batch = batches[run.table];
    const arg: SQLInputValue = batch.byRunNo ? run.runNo : run.runId;
    let n: number;
    if (batch.names) {
      const deleted = queryAllArgs<{ name: string }>(store, batch.sql, arg, BATCH_ROWS);
      for (const row of deleted) names[batch.names].push(row.name);
      n = deleted.length;
    } else if (batch.windowed) {
      n = executeArgs(store, batch.sql, arg, BATCH_ROWS, run.attemptsAfter);
    } else {
      n = executeArgs(store, batch.sql, arg, BATCH_ROWS);
    }
    addRunRows(counts, batch.table, n);
    if (n < BATCH_ROWS) nextBatch(store, run, batch.windowed);
    limits.rowsLeft -= n;
    // Crash tests: the process dies inside a transaction that deleted some of the run's events.
    if (batch.table === "events" && n > 0) crashPoint("state.retention.runHalfDeleted");
    if (limits.rowsLeft <= 0 || limits.clock() >= limits.deadline) break;
  }
  if (run.table < batches.length) return false;
  executeArgs(store, markSql().unmark, run.runId);
  return true;
}

/** The table's rows are gone (of the run, or of its window of attempts: then the next window). */
function nextBatch(store: StateStore, run: MarkedRun, windowed: boolean): void {
  if (windowed) {
    const last = queryOneArgs<{ sequence: number | null }>(
      store,
      WINDOW_END,
      run.runId,
      run.attemptsAfter,
    );
    if (last?.sequence != null) {
      run.attemptsAfter = last.sequence;
      return;
    }
    run.attemptsAfter = 0;
  }
  run.table++;
}

/** The run's attempts in a window after `?3` (sequence), and the window's last sequence. */
const WINDOW = "(SELECT attempt_id FROM node_attempts WHERE run_id = ?1 AND sequence > ?3 " +
  `ORDER BY sequence LIMIT ${ATTEMPT_WINDOW})`;
const WINDOW_END = "SELECT MAX(sequence) AS sequence FROM (SELECT sequence FROM node_attempts " +
  `WHERE run_id = ?1 AND sequence > ?2 ORDER BY sequence LIMIT ${ATTEMPT_WINDOW})`;

/**
 * The statements, built once: a transaction of the pass allocates no SQL text (every string it
 * builds is garbage the collector may stop the thread for while the lock is held).
 */
let marking: {
  prunable: string;
  mark: string;
  unmark: string;
  receipts: string;
  withMark: readonly { table: string; sql: string }[];
} | null = null;

function markSql(): NonNullable<typeof marking> {
  marking ??= {
    prunable: `SELECT r.run_no FROM runs r WHERE r.run_id = ?1 AND ${prunableSql("?2")} AND ` +
      receiptsSettledSql("?3"),
    mark: "INSERT INTO run_prunes (run_id, run_no) VALUES (?1, ?2)",
    unmark: "DELETE FROM run_prunes WHERE run_id = ?1",
    receipts: "DELETE FROM host_commands WHERE request_id IN (SELECT request_id FROM " +
      "host_commands WHERE run_id = ?1 LIMIT ?2)",
    withMark: RUN_OWNED.filter((owned) => owned.withMark !== undefined).map((owned) => ({
      table: owned.table,
      sql: `DELETE FROM ${owned.rows}${owned.withMark ? ` AND ${owned.withMark}` : ""}`,
    })),
  };
  return marking;
}

let batching:
  | readonly {
    table: string;
    sql: string;
    byRunNo: boolean;
    windowed: boolean;
    names?: keyof DeletedNames;
  }[]
  | null = null;

/** One statement per table: deletes the first `?2` of the run's rows there. */
function batchSql(): NonNullable<typeof batching> {
  batching ??= RUN_OWNED.filter((owned) => owned.withMark !== "").map((owned) => {
    const key = owned.key ?? "rowid";
    const returning = owned.names === "epochs"
      ? " RETURNING worker_epoch AS name"
      : owned.names === "attempts"
      ? " RETURNING attempt_id AS name"
      : "";
    const windowed = owned.rows.includes(ATTEMPTS);
    return {
      table: owned.table,
      windowed,
      sql: `DELETE FROM ${owned.table} WHERE ${key} IN (SELECT ${key.replace(/[()]/g, "")} ` +
        `FROM ${windowed ? owned.rows.split(ATTEMPTS).join(WINDOW) : owned.rows} ` +
        `LIMIT ?2)${returning}`,
      byRunNo: owned.byRunNo === true,
      ...(owned.names ? { names: owned.names } : {}),
    };
  });
  return batching;
}

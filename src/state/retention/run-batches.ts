/**
 * Small ended runs deleted together: a prune transaction marks several runs (run-marks.ts: each
 * checked prunable and marked as before), then deletes their rows one statement per table over
 * the whole batch, children first, and their marks with one more. Deleting run by run, each of a
 * run's ~20 tables (and their indexes) was searched from the root again for every run: a batch
 * finds each table's rows of all its runs in one statement, so a run costs less CPU and the time
 * budget takes more runs a transaction, and the pages they share (the B-trees' interior pages,
 * the leaves of tables kept in run order) are written to the WAL once a transaction.
 *
 * Every statement is bounded (`LIMIT` the transaction's rows left): a batch that meets more rows
 * than that (a run with many events, updates, effects) stops at that table, and its runs go on
 * one at a time from there (`MarkedRun.table`), as a large run does. A run with more attempts
 * than a window (`ATTEMPT_WINDOW`) never joins a batch: the tables that name attempts would be
 * searched through all of them in each statement; it goes alone (run-marks.ts, windowed).
 */
import { executeArgs, queryAllArgs, queryOneArgs } from "../statements.ts";
import type { StateStore } from "../store.ts";
import { addRunRows, RUN_OWNED, type TableCounts } from "./run-deletion.ts";
import {
  ATTEMPT_WINDOW,
  type DeletedNames,
  type MarkedRun,
  type TransactionLimits,
} from "./run-marks.ts";
import { crashPoint } from "../../base/crash-point.ts";

/** The batch's run ids (`?1`) and run numbers (`?2`), as JSON arrays. */
const RUN_IDS = "(SELECT value FROM json_each(?1))";

/** Whether the marked run may join a batch: fewer attempts than a window (an indexed count). */
export function batchable(store: StateStore, run: MarkedRun): boolean {
  const row = queryOneArgs<{ n: number }>(
    store,
    "SELECT COUNT(*) AS n FROM (SELECT 1 FROM node_attempts WHERE run_id = ?1 LIMIT ?2)",
    run.runId,
    ATTEMPT_WINDOW,
  );
  return (row?.n ?? 0) < ATTEMPT_WINDOW;
}

/**
 * Deletes the rows of the marked runs, a statement per table, and their marks. True once they
 * are gone whole; false when a table held more rows than `rowsLeft` allowed, or the transaction's
 * deadline passed with tables left (a statement's rows are bounded, its time is not): each run's
 * `table` is then the first table that may still hold rows of it, and the caller deletes them one
 * run at a time from there, checking the deadline after each 64 rows as for any run.
 */
export function deleteBatchRows(
  store: StateStore,
  runs: readonly MarkedRun[],
  limits: TransactionLimits,
  counts: TableCounts,
  names: DeletedNames,
): boolean {
  const ids = JSON.stringify(runs.map((run) => run.runId));
  const numbers = JSON.stringify(runs.map((run) => run.runNo));
  const statements = batchSql();
  for (let table = 0; table < statements.length; table++) {
    const batch = statements[table];
    // An unbounded transaction (the benchmark's one-transaction runs) still binds a number.
    const limit = Math.max(1, Math.min(limits.rowsLeft, 2 ** 31));
    let n: number;
    if (batch.names) {
      const deleted = queryAllArgs<{ name: string }>(store, batch.sql, ids, numbers, limit);
      for (const row of deleted) names[batch.names].push(row.name);
      n = deleted.length;
    } else {
      n = executeArgs(store, batch.sql, ids, numbers, limit);
    }
    addRunRows(counts, batch.table, n);
    limits.rowsLeft -= n;
    // Crash tests: the process dies inside a transaction that deleted some of the runs' events
    // (counted once a run of the batch, as a run alone counts once a statement of its events: a
    // count names a run while each run's events go in one statement, as in the crash tests).
    if (batch.table === "events" && n > 0) {
      for (let k = 0; k < runs.length; k++) crashPoint("state.retention.runHalfDeleted");
    }
    // Rows may be left in this table (it met the bound), or the budget ended with tables left:
    // the runs go on one at a time from the first table that may hold rows of them (a batch's
    // runs have fewer attempts than a window, so a windowed table starts again from the first).
    const full = n >= limit;
    if (full || (table + 1 < statements.length && limits.clock() >= limits.deadline)) {
      for (const run of runs) {
        run.table = full ? table : table + 1;
        run.attemptsAfter = 0;
      }
      return false;
    }
  }
  executeArgs(store, `DELETE FROM run_prunes WHERE run_id IN ${RUN_IDS}`, ids);
  return true;
}

/**
 * The statements, built once (a transaction allocates no SQL text), in the order and number of
 * run-marks.ts's per-run batches, so a run's `table` means the same in both: RUN_OWNED but the
 * tables whose rows went with the mark.
 */
let batching:
  | readonly { table: string; sql: string; names?: keyof DeletedNames }[]
  | null = null;

function batchSql(): NonNullable<typeof batching> {
  batching ??= RUN_OWNED.filter((owned) => owned.withMark !== "").map((owned) => {
    const key = owned.byRunNo ? "event_key" : owned.key ?? "rowid";
    const returning = owned.names === "epochs"
      ? " RETURNING worker_epoch AS name"
      : owned.names === "attempts"
      ? " RETURNING attempt_id AS name"
      : "";
    // The run's rows (`= ?1`, the run id) become the batch's (`IN` its ids); events are keyed
    // by run number, a key range per run.
    const rows = owned.byRunNo
      ? "json_each(?2) j CROSS JOIN events WHERE event_key BETWEEN j.value * 4294967296 AND " +
        "j.value * 4294967296 + 4294967295"
      : owned.rows.split("= ?1").join(`IN ${RUN_IDS}`);
    return {
      table: owned.table,
      sql: `DELETE FROM ${owned.table} WHERE ${key} IN (SELECT ${key.replace(/[()]/g, "")} ` +
        `FROM ${rows} LIMIT ?3)${returning}`,
      ...(owned.names ? { names: owned.names } : {}),
    };
  });
  return batching;
}

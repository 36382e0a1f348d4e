/**
 * Deleting one ended run and everything it owns, in one transaction (the caller's): every table
 * of schema.sql that names a run, children before parents so each foreign key holds at every
 * statement. The run is first named in `run_prunes`, which is what lets the run and its events
 * past their no-delete triggers; the row goes again before the transaction commits.
 */
import type { SQLInputValue } from "node:sqlite";
import { executeArgs, queryAllArgs, queryOneArgs } from "../statements.ts";
import type { StateStore } from "../store.ts";
import { TERMINAL_RUN_STATES } from "../journal.ts";
import { unreferencedSql } from "./run-references.ts";
import { crashPoint } from "../../base/crash-point.ts";

const ATTEMPTS = "(SELECT attempt_id FROM node_attempts WHERE run_id = ?1)";

/**
 * What a run owns, in deletion order. `rows` is the FROM/WHERE part (`?1` = the run id, or its
 * `run_no` where `byRunNo`); `bytes` estimates a row's stored size for a dry run (the stored
 * text and blob columns plus ~40 bytes of row and index overhead).
 */
export const RUN_OWNED: readonly { table: string; rows: string; byRunNo?: true; bytes: string }[] =
  [
    {
      table: "worker_child_groups",
      rows: "worker_child_groups WHERE worker_epoch IN " +
        "(SELECT worker_epoch FROM run_workers WHERE run_id = ?1)",
      bytes: "60",
    },
    {
      table: "run_workers",
      rows: "run_workers WHERE run_id = ?1",
      bytes: "length(worker_epoch) + 160",
    },
    {
      table: "interactive_submissions",
      rows: "interactive_submissions WHERE request_id IN (SELECT request_id FROM " +
        `interactive_requests WHERE attempt_id IN ${ATTEMPTS})`,
      bytes: "length(payload_json) + 200",
    },
    {
      table: "interactive_requests",
      rows: `interactive_requests WHERE attempt_id IN ${ATTEMPTS}`,
      bytes: "length(contract_json) + 200",
    },
    {
      table: "human_decision_resolutions",
      rows: "human_decision_resolutions WHERE decision_id IN (SELECT decision_id FROM " +
        `human_decisions WHERE attempt_id IN ${ATTEMPTS})`,
      bytes: "coalesce(length(answer_json), 0) + 80",
    },
    {
      table: "human_decisions",
      rows: `human_decisions WHERE attempt_id IN ${ATTEMPTS}`,
      bytes: "length(request_json) + coalesce(length(answer_schema_json), 0) + 160",
    },
    {
      table: "effect_attempts",
      rows:
        `effect_attempts WHERE effect_id IN (SELECT effect_id FROM effects WHERE attempt_id IN ${ATTEMPTS})`,
      bytes: "80",
    },
    {
      table: "effects",
      rows: `effects WHERE attempt_id IN ${ATTEMPTS}`,
      bytes: "length(effect_key) * 2 + coalesce(length(receipt_json), 0) + 200",
    },
    {
      // The schedule's record of the slot that started this run: the schedule's next slot is
      // long past it, so nothing fires that slot again once it is gone.
      table: "schedule_firings",
      rows: "schedule_firings WHERE run_id = ?1",
      bytes: "length(schedule_id) + coalesce(length(reason), 0) + 100",
    },
    {
      table: "notifications",
      rows: "notifications WHERE run_id = ?1",
      bytes: "length(message) + 200",
    },
    {
      table: "turn_intents",
      rows: "turn_intents WHERE run_id = ?1",
      bytes: "length(facts_json) + 200",
    },
    {
      table: "node_updates",
      rows: "node_updates WHERE run_id = ?1",
      bytes: "length(data_json) + 120",
    },
    {
      table: "node_attempts",
      rows: "node_attempts WHERE run_id = ?1",
      bytes: "coalesce(length(output_json), 0) + coalesce(length(error_message), 0) + 160",
    },
    {
      table: "host_commands",
      rows: "host_commands WHERE run_id = ?1",
      bytes: "length(receipt_json) + 300",
    },
    {
      table: "events",
      rows: "events WHERE event_key BETWEEN ?1 * 4294967296 AND ?1 * 4294967296 + 4294967295",
      byRunNo: true,
      bytes: "length(payload_json) + coalesce(length(request_id) * 2 + 32, 0) + " +
        "coalesce(length(receipt_json), 0) + 60",
    },
    { table: "leases", rows: "leases WHERE run_id = ?1", bytes: "length(resource) * 2 + 160" },
    { table: "host_children", rows: "host_children WHERE run_id = ?1", bytes: "60" },
    {
      // A removed resource's request of this run: its tombstone keeps no run (run-references.ts).
      table: "controller_workflow_requests",
      rows: "controller_workflow_requests WHERE run_id = ?1",
      bytes: "200",
    },
    {
      table: "run_environments",
      rows: "run_environments WHERE run_id = ?1",
      bytes: "length(env_json) + 60",
    },
    {
      table: "run_bindings",
      rows: "run_bindings WHERE run_id = ?1",
      bytes: "coalesce(length(pi_args_json), 0) + 160",
    },
    { table: "run_queue", rows: "run_queue WHERE run_id = ?1", bytes: "80" },
    {
      table: "runs",
      rows: "runs WHERE run_id = ?1",
      bytes:
        "length(input_json) + length(workflow_source_json) + coalesce(length(output_json), 0) + " +
        "length(project_path) + 300",
    },
  ];

/** Rows deleted per table (zero counts left out). */
export type TableCounts = Record<string, number>;

/** SQL: the ended, unreferenced run aliased `r` finished before `?<cutoffParam>`. */
export function prunableSql(cutoffParam: string): string {
  return `r.state IN (${TERMINAL_RUN_STATES.map((s) => `'${s}'`).join(", ")}) AND ` +
    `r.finished_at < ${cutoffParam} AND ${unreferencedSql()}`;
}

/** SQL: no receipt of the run aliased `r` completed at or after `?<floorParam>`. */
export function receiptsSettledSql(floorParam: string): string {
  return "NOT EXISTS (SELECT 1 FROM host_commands h WHERE h.run_id = r.run_id AND " +
    `h.completed_at >= ${floorParam})`;
}

/**
 * Deletes the run and what it owns when it is still prunable (checked here, inside the
 * caller's write transaction: a reference made since it was listed keeps it). Adds the deleted
 * rows to `counts`; returns the run's worker epochs and attempt ids (their output files in the
 * workers directory go after the commit), or null when the run was kept.
 */
export function deleteRunInTx(
  store: StateStore,
  runId: string,
  cutoff: number,
  receiptFloor: number,
  counts: TableCounts,
): { epochs: string[]; attempts: string[] } | null {
  const sql = deletionSql();
  const run = queryOneArgs<{ run_no: number }>(store, sql.prunable, runId, cutoff, receiptFloor);
  if (!run) return null;
  const epochs = queryAllArgs<{ worker_epoch: string }>(store, sql.epochs, runId)
    .map((row) => row.worker_epoch);
  const attempts = queryAllArgs<{ attempt_id: string }>(store, sql.attempts, runId)
    .map((row) => row.attempt_id);
  executeArgs(store, sql.mark, runId);
  for (const owned of sql.deletes) {
    const arg: SQLInputValue = owned.byRunNo ? run.run_no : runId;
    const n = executeArgs(store, owned.sql, arg);
    if (n > 0) counts[owned.table] = (counts[owned.table] ?? 0) + n;
    // Crash tests: the process dies with the run half deleted inside the open transaction.
    if (owned.table === "events") crashPoint("state.retention.runHalfDeleted");
  }
  executeArgs(store, sql.unmark, runId);
  return { epochs, attempts };
}

/**
 * The deletion's statements, built once: a transaction of the pass allocates no SQL text (every
 * string it builds is garbage the collector may stop the thread for while the lock is held).
 */
let statements: {
  prunable: string;
  epochs: string;
  attempts: string;
  mark: string;
  unmark: string;
  deletes: readonly { table: string; sql: string; byRunNo: boolean }[];
} | null = null;

function deletionSql(): NonNullable<typeof statements> {
  statements ??= {
    prunable: `SELECT r.run_no FROM runs r WHERE r.run_id = ?1 AND ${prunableSql("?2")} AND ` +
      receiptsSettledSql("?3"),
    epochs: "SELECT worker_epoch FROM run_workers WHERE run_id = ?1",
    attempts: "SELECT attempt_id FROM node_attempts WHERE run_id = ?1",
    mark: "INSERT INTO run_prunes (run_id) VALUES (?1)",
    unmark: "DELETE FROM run_prunes WHERE run_id = ?1",
    deletes: RUN_OWNED.map((owned) => ({
      table: owned.table,
      sql: `DELETE FROM ${owned.rows}`,
      byRunNo: owned.byRunNo === true,
    })),
  };
  return statements;
}

/** Counts what deleting the run would remove and estimates its bytes (a dry run; reads only). */
export function countRunRows(
  store: StateStore,
  run: { runId: string; runNo: number },
  counts: TableCounts,
): number {
  let bytes = 0;
  for (const owned of RUN_OWNED) {
    const row = queryOneArgs<{ n: number; b: number | null }>(
      store,
      `SELECT COUNT(*) AS n, SUM(${owned.bytes}) AS b FROM ${owned.rows}`,
      owned.byRunNo ? run.runNo : run.runId,
    );
    if (row && row.n > 0) {
      counts[owned.table] = (counts[owned.table] ?? 0) + row.n;
      bytes += row.b ?? 0;
    }
  }
  return bytes;
}

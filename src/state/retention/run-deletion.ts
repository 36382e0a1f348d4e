/**
 * What an ended run owns: every table of schema.sql that names a run, children before parents
 * (RUN_OWNED), and which of its rows go in the transaction that marks the run as being pruned
 * (run-marks.ts deletes the run in bounded transactions).
 */
import { queryOneArgs } from "../statements.ts";
import type { StateStore } from "../store.ts";
import { TERMINAL_RUN_STATES } from "../journal.ts";
import { unreferencedSql } from "./run-references.ts";
import { ENDED_RUN_RECEIPTS } from "../../protocol/retention-operations.ts";

/** The run's attempts, in the rows of the tables that name an attempt rather than the run. */
export const ATTEMPTS = "(SELECT attempt_id FROM node_attempts WHERE run_id = ?1)";

/** One table's rows of a run. */
export interface RunOwnedRows {
  table: string;
  /** The FROM/WHERE part (`?1` = the run id, or its `run_no` where `byRunNo`). */
  rows: string;
  byRunNo?: true;
  /** What names one row (a batch deletes `key IN (the first n rows)`); the rowid by default. */
  key?: string;
  /**
   * The rows found from outside the run (by a session, a schedule, a controller, a request id)
   * rather than through its `runs` row: they go with the mark, with the run's row (a condition
   * on them, or "" for all), so no reader meets them once the run is gone.
   */
  withMark?: string;
  /** A column of each deleted row that names a file of the run (run-marks.ts hands them over). */
  names?: "epochs" | "attempts";
  /** Estimates a row's stored size for a dry run (text and blobs plus ~40 bytes of overhead). */
  bytes: string;
}

/** What a run owns, in deletion order: children before the rows they point at. */
export const RUN_OWNED: readonly RunOwnedRows[] = [
  {
    table: "worker_child_groups",
    rows: "worker_child_groups WHERE worker_epoch IN " +
      "(SELECT worker_epoch FROM run_workers WHERE run_id = ?1)",
    key: "(worker_epoch, pid, start_time)",
    bytes: "60",
  },
  {
    table: "run_workers",
    rows: "run_workers WHERE run_id = ?1",
    names: "epochs",
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
    key: "(schedule_id, slot_at)",
    withMark: "",
    bytes: "length(schedule_id) + coalesce(length(reason), 0) + 100",
  },
  {
    table: "notifications",
    rows: "notifications WHERE run_id = ?1",
    // An undelivered one is claimed by its session.
    withMark: "state != 'delivered'",
    bytes: "length(message) + 200",
  },
  {
    table: "turn_intents",
    rows: "turn_intents WHERE run_id = ?1",
    // An open one is claimed by its session.
    withMark: "state != 'resolved'",
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
    names: "attempts",
    bytes: "coalesce(length(output_json), 0) + coalesce(length(error_message), 0) + 160",
  },
  {
    table: "host_commands",
    rows: "host_commands WHERE run_id = ?1",
    // A client's retry finds its receipt by request id.
    key: "request_id",
    withMark: "",
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
  {
    table: "host_children",
    rows: "host_children WHERE run_id = ?1",
    key: "(pid, start_time)",
    withMark: "",
    bytes: "60",
  },
  {
    // A removed resource's request of this run: its tombstone keeps no run (run-references.ts).
    table: "controller_workflow_requests",
    rows: "controller_workflow_requests WHERE run_id = ?1",
    withMark: "",
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
    // Every reader finds a run through its row: gone with the mark, the run is gone to them.
    withMark: "",
    bytes:
      "length(input_json) + length(workflow_source_json) + coalesce(length(output_json), 0) + " +
      "length(project_path) + 300",
  },
];

/** Rows deleted per table (zero counts left out). */
export type TableCounts = Record<string, number>;

/**
 * The count a table's rows of an ended run go under: a run's client receipts apart from those of
 * no run (`ENDED_RUN_RECEIPTS`), as most go before the run's mark, which may then keep the run.
 */
export function runRowsKey(table: string): string {
  return table === "host_commands" ? ENDED_RUN_RECEIPTS : table;
}

/** Adds `n` rows deleted (or counted) under `key`; zero counts stay out. */
export function addRows(counts: TableCounts, key: string, n: number): void {
  if (n > 0) counts[key] = (counts[key] ?? 0) + n;
}

/** Adds `n` rows of an ended run's `table`, under that table's count (`runRowsKey`). */
export function addRunRows(counts: TableCounts, table: string, n: number): void {
  addRows(counts, runRowsKey(table), n);
}

/**
 * SQL: the ended run aliased `r` finished before `?<cutoffParam>`, and `references` holds
 * (default: nothing references it).
 */
export function prunableSql(cutoffParam: string, references = unreferencedSql()): string {
  return `r.state IN (${TERMINAL_RUN_STATES.map((s) => `'${s}'`).join(", ")}) AND ` +
    `r.finished_at < ${cutoffParam} AND ${references}`;
}

/** SQL: no receipt of the run aliased `r` completed at or after `?<floorParam>`. */
export function receiptsSettledSql(floorParam: string): string {
  return "NOT EXISTS (SELECT 1 FROM host_commands h WHERE h.run_id = r.run_id AND " +
    `h.completed_at >= ${floorParam})`;
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
      addRunRows(counts, owned.table, row.n);
      bytes += row.b ?? 0;
    }
  }
  return bytes;
}

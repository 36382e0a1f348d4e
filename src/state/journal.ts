/**
 * The history every committed change leaves behind: one immutable event appended to the run's
 * ordered log, and one small viewer delta joining the global feed. The run revision is the seq of
 * the run's newest event (every revision has exactly one event), so appending the event is what
 * increases it: nothing else is written per change. Called inside the transaction of the change:
 * `nextRevision` before the domain change (a terminal run takes no new revision), `appendHistory`
 * after it.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import {
  fingerprintBytes,
  messageReceiptConflict,
  type MessageReceiptInput,
} from "./message-receipts.ts";
import { type StateStore } from "./store.ts";
import { execute, executeArgs, queryOne } from "./statements.ts";
import type { RunState } from "../protocol/run-operations.ts";
import { endedState, TransitionError } from "./errors.ts";
import { encodeValue } from "./values.ts";

export interface JournalEntry {
  /** Event type, e.g. `run.queued`, `node.finished`. */
  type: string;
  /** Small event payload (ids, states, error codes); never outputs or prompts. */
  payload?: JsonValue;
  /** Viewer delta summary; defaults to `{state, queue}` of the run after the change. */
  summary?: JsonValue;
}

/**
 * The key of event `?2` of run `?1` (schema.sql `events.event_key`): `?6` is the run's `run_no`
 * when the caller has it (the protected write read it), else it is looked up.
 */
const EVENT_KEY_SQL = "COALESCE(?6, (SELECT run_no FROM runs WHERE run_id = ?1)) * 4294967296 + ?2";

/** SQL bounds of the event keys of the run whose `run_no` is `runNo` (an SQL expression). */
export function eventKeyRangeSql(key: string, runNo: string): string {
  return `${key} BETWEEN ${runNo} * 4294967296 AND ${runNo} * 4294967296 + 4294967295`;
}

/**
 * SQL: a column of the newest event of the run aliased `run` (an expression over its `run_no`).
 * Its `seq` is the run revision and its `at` the time the run last changed: the one definition
 * every reader of a run's revision or update time uses. One descending seek of the events key.
 */
export function newestEventSql(column: "seq" | "at", run = "r"): string {
  return `(SELECT e.${column} FROM events e WHERE ${
    eventKeyRangeSql("e.event_key", `${run}.run_no`)
  } ORDER BY e.event_key DESC LIMIT 1)`;
}

/** SQL: the revision of the run aliased `run` (see `newestEventSql`). */
export function runRevisionSql(run = "r"): string {
  return newestEventSql("seq", run);
}

export const TERMINAL_RUN_STATES = [
  "completed",
  "failed",
  "timed_out",
  "cancelled",
] as const satisfies readonly RunState[];

/** True for the run states that never change again (a terminal run takes no new revision). */
export function isTerminalRunState(state: string): boolean {
  return (TERMINAL_RUN_STATES as readonly string[]).includes(state);
}

/**
 * The revision the change being made produces (the run's newest seq + 1); the change's
 * `appendHistory` makes it current. A terminal run accepts no change.
 */
export function nextRevision(store: StateStore, runId: string): number {
  const row = queryOne<{ state: string; revision: number }>(
    store,
    `SELECT r.state, ${runRevisionSql()} AS revision FROM runs r WHERE r.run_id = :runId`,
    { runId },
  );
  if (!row) throw new Error(`Cannot change unknown run ${runId}`);
  if (isTerminalRunState(row.state)) {
    throw new TransitionError(runId, "change", endedState(row.state));
  }
  return row.revision + 1;
}

/**
 * Appends the event and viewer delta of the change that produced `revision`. With `receipt`, the
 * event carries the receipt of the worker message that made the change (message-receipts.ts): a
 * message id that already has one throws `RequestConflictError`. `result` is the change's own
 * result, for a receipt function; `runNo` the run's number when the caller read it already.
 */
export function appendHistory(
  store: StateStore,
  runId: string,
  revision: number,
  now: number,
  entry: JournalEntry,
  receipt?: MessageReceiptInput,
  result?: unknown,
  runNo?: number,
): void {
  const payload = encodeValue("event payload", entry.payload ?? {});
  // A revision taken twice (a change that did not go through `nextRevision`) is refused by the
  // events PRIMARY KEY: the event is what makes the revision current.
  if (receipt === undefined) {
    executeArgs(
      store,
      // Every revision has exactly one event, so the sequence number is the revision.
      `INSERT INTO events (event_key, run_id, seq, type, run_revision, payload_json, at) VALUES ` +
        `(${EVENT_KEY_SQL}, ?1, ?2, ?3, ?2, ?4, ?5)`,
      runId,
      revision,
      entry.type,
      payload,
      now,
      runNo ?? null,
    );
  } else {
    const body = typeof receipt.receipt === "function"
      ? receipt.receipt({ runId, revision, result })
      : receipt.receipt;
    try {
      executeArgs(
        store,
        "INSERT INTO events (event_key, run_id, seq, type, run_revision, payload_json, at, " +
          `request_id, request_fingerprint, receipt_json) VALUES (${EVENT_KEY_SQL}, ?1, ?2, ?3, ` +
          "?2, ?4, ?5, ?7, ?8, ?9)",
        runId,
        revision,
        entry.type,
        payload,
        now,
        runNo ?? null,
        receipt.requestId,
        fingerprintBytes(receipt.requestFingerprint),
        body === undefined ? null : encodeValue("message receipt", body),
      );
    } catch (error) {
      throw messageReceiptConflict(store, receipt, error);
    }
  }
  appendViewerDelta(store, runId, revision, now, entry.type, entry.summary);
}

/**
 * Appends a viewer delta of no run: a change a viewer cannot patch run by run (`runs.pruned`),
 * so it reloads its bounded window.
 */
export function appendFeedDelta(store: StateStore, kind: string, now: number): void {
  executeArgs(
    store,
    "INSERT INTO viewer_deltas (run_id, run_revision, kind, summary_json, at) " +
      "VALUES (NULL, 0, ?1, '{}', ?2)",
    kind,
    now,
  );
}

/** Appends a viewer delta alone (facts outside the run row, e.g. a worker epoch ending). */
export function appendViewerDelta(
  store: StateStore,
  runId: string,
  revision: number,
  now: number,
  kind: string,
  summary?: JsonValue,
): void {
  if (summary !== undefined) {
    executeArgs(
      store,
      "INSERT INTO viewer_deltas (run_id, run_revision, kind, summary_json, at) " +
        "VALUES (?1, ?2, ?3, ?4, ?5)",
      runId,
      revision,
      kind,
      encodeValue("viewer delta", summary),
      now,
    );
    return;
  }
  execute(
    store,
    "INSERT INTO viewer_deltas (run_id, run_revision, kind, summary_json, at) SELECT :runId, " +
      ":revision, :kind, json_object('state', r.state, 'queue', q.state), :now FROM runs r " +
      "JOIN run_queue q ON q.run_id = r.run_id WHERE r.run_id = :runId",
    { runId, revision, kind, now },
  );
}

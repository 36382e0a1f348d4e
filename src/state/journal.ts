/**
 * The history every committed change leaves behind: the run's revision increases, one immutable
 * event is appended to the run's ordered log, and one small viewer delta joins the global feed.
 * Called inside the transaction of the change: `bumpRevision` before the domain change (a
 * terminal run row accepts no later update), `appendHistory` after it.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import {
  fingerprintBytes,
  messageReceiptConflict,
  type MessageReceiptInput,
} from "./message-receipts.ts";
import { type StateStore } from "./store.ts";
import { execute, executeArgs, queryOne } from "./statements.ts";
import { encodeValue } from "./values.ts";

export interface JournalEntry {
  /** Event type, e.g. `run.queued`, `node.finished`. */
  type: string;
  /** Small event payload (ids, states, error codes); never outputs or prompts. */
  payload?: JsonValue;
  /** Viewer delta summary; defaults to `{state, queue}` of the run after the change. */
  summary?: JsonValue;
}

/** The key of event `?2` of run `?1` (schema.sql `events.event_key`). */
const EVENT_KEY_SQL = "(SELECT run_no FROM runs WHERE run_id = ?1) * 4294967296 + ?2";

/** SQL bounds of the event keys of the run whose `run_no` is `runNo` (an SQL expression). */
export function eventKeyRangeSql(key: string, runNo: string): string {
  return `${key} BETWEEN ${runNo} * 4294967296 AND ${runNo} * 4294967296 + 4294967295`;
}

/** Increases the run revision; returns the new one. */
export function bumpRevision(store: StateStore, runId: string, now: number): number {
  const row = queryOne<{ revision: number }>(
    store,
    "UPDATE runs SET revision = revision + 1, updated_at = :now WHERE run_id = :runId " +
      "RETURNING revision",
    { runId, now },
  );
  if (!row) throw new Error(`Cannot bump the revision of unknown run ${runId}`);
  return row.revision;
}

/**
 * Appends the event and viewer delta of the change that produced `revision`. With `receipt`, the
 * event carries the receipt of the worker message that made the change (message-receipts.ts): a
 * message id that already has one throws `RequestConflictError`. `result` is the change's own
 * result, for a receipt function.
 */
export function appendHistory(
  store: StateStore,
  runId: string,
  revision: number,
  now: number,
  entry: JournalEntry,
  receipt?: MessageReceiptInput,
  result?: unknown,
): void {
  const payload = encodeValue("event payload", entry.payload ?? {});
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
          "?2, ?4, ?5, ?6, ?7, ?8)",
        runId,
        revision,
        entry.type,
        payload,
        now,
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

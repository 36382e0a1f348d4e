/**
 * Host command receipts of clients. A receipt is committed in the same transaction as the change
 * it acknowledges (transitions take a `receipt` argument), so a crash never leaves a change
 * without its receipt or a receipt without its change. Repeating a request id returns the stored
 * row. Worker-message receipts live in the events they produced (message-receipts.ts).
 */
import { fingerprint, type JsonValue } from "../protocol/canonical-json.ts";
import { HOST_OUTCOMES, type HostOutcome } from "../protocol/host-response.ts";
import { RequestConflictError } from "./errors.ts";
import { type StateStore } from "./store.ts";
import { executeArgs, queryOne } from "./statements.ts";
import { writeTransaction } from "./transactions.ts";
import { decodeValue, encodeValue } from "./values.ts";

/** A stored receipt's outcome: one of the protocol's response outcomes. */
export const HOST_COMMAND_OUTCOMES = HOST_OUTCOMES;
export type HostCommandOutcome = HostOutcome;

/** What the caller knows about the request; the store adds run id, revision and times. */
export interface CommandReceiptInput {
  requestId: string;
  clientId: string;
  operation: string;
  idempotencyKey?: string | null;
  /** `fingerprint()` of the request (operation, run, payload): one per request id. */
  requestFingerprint: string;
  /** Defaults to `accepted`. */
  outcome?: HostCommandOutcome;
  /**
   * The response receipt body (small; ids and states, no payloads). A function is evaluated
   * inside the transaction, after the change, so the stored receipt can quote the committed row.
   */
  receipt?: JsonValue | ((target: ReceiptTarget) => JsonValue);
}

/** What a receipt function sees: the run and revision the command produced, and its result. */
export interface ReceiptTarget {
  runId: string | null;
  revision: number | null;
  /** The protected change's own result (e.g. an effect reservation), when there is one. */
  result?: unknown;
}

export interface StoredHostCommand {
  requestId: string;
  clientId: string;
  operation: string;
  idempotencyKey: string | null;
  requestFingerprint: string;
  runId: string | null;
  acceptedRevision: number | null;
  outcome: HostCommandOutcome;
  receipt: JsonValue;
  receiptHash: string;
  createdAt: number;
  completedAt: number;
}

interface HostCommandRow {
  request_id: string;
  client_id: string;
  operation: string;
  idempotency_key: string | null;
  request_fingerprint: string;
  run_id: string | null;
  accepted_revision: number | null;
  outcome: HostCommandOutcome;
  receipt_json: string;
  receipt_hash: string;
  created_at: number;
  completed_at: number;
}

/** The stored receipt of `requestId`, or undefined. Compare its fingerprint to detect reuse. */
export function findHostCommand(
  store: StateStore,
  requestId: string,
): StoredHostCommand | undefined {
  const row = queryOne<HostCommandRow>(
    store,
    "SELECT * FROM host_commands WHERE request_id = :requestId",
    { requestId },
  );
  return row && toStored(row);
}

/**
 * The earliest receipt of a command with this client's idempotency key (a new request id
 * repeating it gets the stored answer, outcome `adopted`).
 */
export function findHostCommandByKey(
  store: StateStore,
  key: { clientId: string; operation: string; idempotencyKey: string },
): StoredHostCommand | undefined {
  const row = queryOne<HostCommandRow>(
    store,
    "SELECT * FROM host_commands WHERE client_id = :clientId AND operation = :operation " +
      "AND idempotency_key = :idempotencyKey ORDER BY created_at, request_id LIMIT 1",
    { ...key },
  );
  return row && toStored(row);
}

/** Records a receipt with no run change (rejections, read-only or non-run commands). */
export function recordHostCommand(
  store: StateStore,
  receipt: CommandReceiptInput,
  target: { runId?: string | null; revision?: number | null } = {},
): StoredHostCommand {
  return writeTransaction(store, () =>
    recordHostCommandInTx(store, receipt, {
      runId: target.runId ?? null,
      revision: target.revision ?? null,
      now: store.clock.now(),
    }));
}

/** Inserts the receipt inside the caller's transaction. Throws `RequestConflictError`. */
export function recordHostCommandInTx(
  store: StateStore,
  receipt: CommandReceiptInput,
  target: { runId: string | null; revision: number | null; now: number; result?: unknown },
): StoredHostCommand {
  const body = typeof receipt.receipt === "function"
    ? receipt.receipt({ runId: target.runId, revision: target.revision, result: target.result })
    : receipt.receipt ?? {};
  const receiptJson = encodeValue("command receipt", body);
  const row: HostCommandRow = {
    request_id: receipt.requestId,
    client_id: receipt.clientId,
    operation: receipt.operation,
    idempotency_key: receipt.idempotencyKey ?? null,
    request_fingerprint: receipt.requestFingerprint,
    run_id: target.runId,
    accepted_revision: target.revision,
    outcome: receipt.outcome ?? "accepted",
    receipt_json: receiptJson,
    receipt_hash: fingerprint(body),
    created_at: target.now,
    completed_at: target.now,
  };
  // No pre-SELECT: the primary key refuses a repeated request id; only then is the stored
  // fingerprint read, to tell a retry from a reused id.
  try {
    insertHostCommand(store, row);
  } catch (error) {
    const existing = isUniqueViolation(error)
      ? queryOne<{ request_fingerprint: string }>(
        store,
        "SELECT request_fingerprint FROM host_commands WHERE request_id = :requestId",
        { requestId: receipt.requestId },
      )
      : undefined;
    if (!existing) throw error;
    throw new RequestConflictError(
      receipt.requestId,
      existing.request_fingerprint === receipt.requestFingerprint
        ? "alreadyRecorded"
        : "otherPayload",
    );
  }
  return toStored(row);
}

/** SQLITE_CONSTRAINT_PRIMARYKEY or SQLITE_CONSTRAINT_UNIQUE. */
function isUniqueViolation(error: unknown): boolean {
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  return errcode === 1555 || errcode === 2067;
}

function insertHostCommand(store: StateStore, row: HostCommandRow): void {
  executeArgs(
    store,
    "INSERT INTO host_commands (request_id, client_id, operation, idempotency_key, " +
      "request_fingerprint, run_id, accepted_revision, outcome, receipt_json, receipt_hash, " +
      "created_at, completed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    row.request_id,
    row.client_id,
    row.operation,
    row.idempotency_key,
    row.request_fingerprint,
    row.run_id,
    row.accepted_revision,
    row.outcome,
    row.receipt_json,
    row.receipt_hash,
    row.created_at,
    row.completed_at,
  );
}

function toStored(row: HostCommandRow): StoredHostCommand {
  return {
    requestId: row.request_id,
    clientId: row.client_id,
    operation: row.operation,
    idempotencyKey: row.idempotency_key,
    requestFingerprint: row.request_fingerprint,
    runId: row.run_id,
    acceptedRevision: row.accepted_revision,
    outcome: row.outcome,
    receipt: decodeValue(row.receipt_json) ?? {},
    receiptHash: row.receipt_hash,
    createdAt: row.created_at,
    completedAt: row.completed_at,
  };
}

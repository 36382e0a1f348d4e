/**
 * Receipts of accepted worker messages (spec "Worker protocol": a retry receives the same answer).
 * A message's receipt is stored in the event its protected write appends (journal.ts), in the same
 * transaction: the event row is written anyway, so the receipt costs one small index entry
 * (`events_by_request`) instead of a separate receipts table and its index. Client commands keep
 * theirs in `host_commands` (host-commands.ts).
 */
import { Buffer } from "node:buffer";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { RequestConflictError } from "./errors.ts";
import type { ReceiptTarget } from "./host-commands.ts";
import { type StateStore } from "./store.ts";
import { queryOneArgs } from "./statements.ts";
import { decodeValue } from "./values.ts";

/** What the host knows about the worker message an accepted change answers. */
export interface MessageReceiptInput {
  /** The worker message id: unique per message (worker message ids name their epoch). */
  requestId: string;
  /**
   * `fingerprint()` of the message (`sha256:<hex>`): a reused id with another message is refused.
   * Stored as its 32 bytes (`fingerprintBytes`).
   */
  requestFingerprint: string;
  /**
   * What a replay's answer quotes beyond the revision (an effect reservation); a function sees the
   * committed change. Omitted: the answer is the revision alone.
   */
  receipt?: JsonValue | ((target: ReceiptTarget) => JsonValue);
}

/** A stored message receipt, as a retry is answered from it. */
export interface StoredMessageReceipt {
  requestId: string;
  requestFingerprint: string;
  runId: string;
  /** The run revision the message produced (its event's sequence number). */
  acceptedRevision: number;
  /** The stored answer body, or null when the answer is the revision alone. */
  receipt: JsonValue | null;
}

/** The receipt of the accepted message `requestId`, or undefined. */
export function findMessageReceipt(
  store: StateStore,
  requestId: string,
): StoredMessageReceipt | undefined {
  const row = queryOneArgs<{
    run_id: string;
    run_revision: number;
    request_fingerprint: Uint8Array;
    receipt_json: string | null;
  }>(
    store,
    "SELECT run_id, run_revision, request_fingerprint, receipt_json FROM events " +
      "WHERE request_id = ?1",
    requestId,
  );
  if (!row) return undefined;
  return {
    requestId,
    requestFingerprint: `${FINGERPRINT_PREFIX}${
      Buffer.from(row.request_fingerprint).toString("hex")
    }`,
    runId: row.run_id,
    acceptedRevision: row.run_revision,
    receipt: row.receipt_json === null ? null : decodeValue(row.receipt_json) ?? null,
  };
}

const FINGERPRINT_PREFIX = "sha256:";
const FINGERPRINT = /^sha256:[0-9a-f]{64}$/;

/**
 * The stored form of a message fingerprint: the 32 bytes of the digest, not its 71 characters of
 * text (events are most of a node boundary's pages, and their size sets how often they split).
 */
export function fingerprintBytes(requestFingerprint: string): Uint8Array {
  if (!FINGERPRINT.test(requestFingerprint)) {
    throw new TypeError("A message receipt's fingerprint must be sha256:<64 hex digits>");
  }
  return Buffer.from(requestFingerprint.slice(FINGERPRINT_PREFIX.length), "hex");
}

/**
 * After the event insert failed: a `RequestConflictError` when the message id already has a
 * receipt (`alreadyRecorded` for the same message, `otherPayload` for another), else the error.
 */
export function messageReceiptConflict(
  store: StateStore,
  receipt: MessageReceiptInput,
  error: unknown,
): unknown {
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  // SQLITE_CONSTRAINT_UNIQUE: only the message id's index can refuse a new event's key.
  if (errcode !== 2067) return error;
  const stored = findMessageReceipt(store, receipt.requestId);
  if (!stored) return error;
  return new RequestConflictError(
    receipt.requestId,
    stored.requestFingerprint === receipt.requestFingerprint ? "alreadyRecorded" : "otherPayload",
  );
}

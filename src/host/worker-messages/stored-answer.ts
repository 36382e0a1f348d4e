/**
 * Retries of committed worker messages. A worker that lost a reply sends the same message (same
 * id) again; the transition's own transaction refuses it (the id is stored with its receipt), and
 * only then is the stored receipt read, so nothing is applied twice and the retry gets the first
 * answer in full.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import {
  rejectedReply,
  type WorkerMessage,
  type WorkerReply,
  workerReply,
} from "../../protocol/worker-messages.ts";
import { findMessageReceipt } from "../../state/message-receipts.ts";
import type { ActiveWorker } from "../supervision/active-worker.ts";
import type { HostContext } from "../host-context.ts";
import { isSettled } from "../supervision/worker-life.ts";
import { startFacts } from "./facts-stream.ts";

/**
 * The answer to a retry of a committed message (same id), or null when it is not one: the
 * first answer in full. The stored receipt quotes a kind's result (an effect reservation); a
 * replayed `worker.ready` gets the run's facts again from their first piece.
 */
export function storedAnswer(
  ctx: HostContext,
  worker: ActiveWorker,
  message: WorkerMessage,
  requestId: string,
  requestFingerprint: string,
): WorkerReply | null {
  const { messageId } = message;
  const stored = findMessageReceipt(ctx.store, requestId);
  if (!stored) return null;
  // Nothing was applied twice: the same answer, or a refusal when the id names another message.
  if (stored.requestFingerprint !== requestFingerprint) {
    return rejectedReply(
      messageId,
      "protocolRejected",
      "the message id was used for another message",
    );
  }
  const body = stored.receipt as { result?: JsonValue } | null;
  const result = typeof body === "object" && body !== null ? body.result : undefined;
  return workerReply({
    messageId,
    outcome: "accepted",
    revision: stored.acceptedRevision,
    ...(message.kind === "worker.ready" && !isSettled(worker)
      ? { factsChunk: startFacts(ctx, worker) }
      : {}),
    ...(result !== undefined ? { result } : {}),
  });
}

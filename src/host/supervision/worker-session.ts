/**
 * The host's end of one worker's fd-3 channel. Frames are answered in order, each inside the next
 * group commit (commit-group.ts: every worker's frames read in one event-loop turn share one
 * COMMIT) and replied to only after it; at most MAX_UNANSWERED frames wait for their replies
 * (backpressure). For each message, in order:
 *
 *   1. header schema (the payload stays unread);
 *   2. fence: run, generation, worker epoch, and that the host still holds the claim for this
 *      worker. A stale sender gets ONE `claimLost` reply and its group is stopped;
 *   3. this session's remembered reply for the message id: a retry gets the same reply;
 *   4. payload schema (`protocolRejected` on failure);
 *   5. the state transition under the run claim, which checks the expected revision and stores
 *      the message receipt in the same transaction; then the reply. When the transition refuses,
 *      a durable receipt for the message id (a retry of a committed message) answers instead.
 */
import { sha256Hex } from "../../protocol/canonical-json.ts";
import { type FailureClass } from "../../protocol/failures.ts";
import { corkForTick, encodeFrameText, FrameError } from "../../protocol/framing.ts";
import {
  claimLostReply,
  parseWorkerHeader,
  parseWorkerPayload,
  rejectedReply,
  replyableId,
  type WorkerMessage,
  type WorkerReply,
  workerReply,
} from "../../protocol/worker-messages.ts";
import { fastWorkerHeader, fastWorkerPayload } from "../../protocol/worker-message-fast.ts";
import { ClaimLostError } from "../../state/errors.ts";
import { fastCanonicalJson } from "../../protocol/fast-canonical-json.ts";
import { afterGroupCommit } from "../../state/transactions.ts";
import type { HostContext } from "../host-context.ts";
import type { ActiveWorker, StopReason } from "./active-worker.ts";
import { crashPoint } from "../../base/crash-point.ts";
import { settleAfterNextCommit, type Settled } from "../commit-group.ts";
import { readerOf } from "./children/spawn-child.ts";
import { staleness } from "./children/epoch-fence.ts";
import type { Applied } from "../worker-messages/applied.ts";
import { applyWorkerMessage } from "../worker-messages/message-handlers.ts";
import { readRegistrationTable } from "../worker-messages/worker-progress.ts";
import { storedAnswer } from "../worker-messages/stored-answer.ts";
import {
  isKept,
  isReleasedUnsettled,
  isSettled,
  keep,
  releaseClaim,
  stopReasonOf,
} from "./worker-life.ts";

/** Replies a session keeps for retried message ids (durable receipts cover older ones). */
const REMEMBERED_REPLIES = 16;

export interface SessionHooks {
  /** Stops the worker's group for `reason` (idempotent); the exit handler does the rest. */
  stop(worker: ActiveWorker, reason: StopReason, diagnostic: string): void;
  /** A `node.started` committed: arm the host-side deadline. */
  onAttemptStarted(worker: ActiveWorker): void;
  /** The open attempt closed (finished, failed, parked). */
  onAttemptClosed(worker: ActiveWorker): void;
  /** `worker.ready` committed. */
  onReady(worker: ActiveWorker): void;
  /**
   * A worker proposes to start a node. True when the host is stopping: it has parked the run at
   * this durable boundary instead, and the worker is told to leave.
   */
  parkedAtBoundary(worker: ActiveWorker): boolean;
  /**
   * The worker says goodbye after its epoch parked. True when the host keeps the process as the
   * run's prepared child (prepared-children.ts): the reply tells it to stay, and this session
   * stops reading its channel.
   */
  keepPrepared(worker: ActiveWorker): boolean;
  /**
   * A reply cannot cross the channel (past the frame limit): the run fails and the worker is
   * stopped (runs/reply-too-large.ts).
   */
  replyTooLarge(worker: ActiveWorker): void;
}

/**
 * Frames a worker may have sent that are not answered yet: a worker sends pure nodes' starts and
 * closes ahead of their verdicts, up to its window (AHEAD_WINDOW in the worker's node-runner.ts)
 * plus a message or two behind it. Past this the session stops reading until replies are
 * written: backpressure.
 */
const MAX_UNANSWERED = 96;

/** Reads and answers frames until the worker's channel ends. */
export async function serveWorkerChannel(
  ctx: HostContext,
  worker: ActiveWorker,
  hooks: SessionHooks,
): Promise<void> {
  const channel = worker.spawned.channel;
  const receipts = new Map<string, WorkerReply>();
  let claimLostSent = false;
  // Frames read whose replies have not been handed to the channel yet.
  let unanswered = 0;
  // False once a reply can no longer be trusted or sent (failed COMMIT, reply too large).
  let open = true;
  let needDrain = false;
  let wake: (() => void) | null = null;
  const wakeReader = () => {
    const resolve = wake;
    wake = null;
    resolve?.();
  };
  // The channel took what waited (or is gone): the reader may go on.
  const drained = () => {
    channel.off("drain", drained);
    channel.off("close", drained);
    needDrain = false;
    wakeReader();
  };
  const send = (reply: WorkerReply) => {
    let text: string;
    try {
      text = encodeFrameText(reply);
    } catch (error) {
      // Replies are built here from committed values, so only their size can fail them.
      if (!(error instanceof FrameError && error.code === "frameTooLarge")) return;
      open = false;
      hooks.replyTooLarge(worker);
      return;
    }
    // A worker that is gone is handled by the exit handler.
    if (channel.destroyed || channel.writableEnded) return;
    corkForTick(channel); // the replies of one group commit leave together
    if (!channel.write(text) && !needDrain) {
      needDrain = true;
      channel.once("drain", drained);
      channel.once("close", drained);
    }
  };
  const settle = (outcome: Settled<WorkerReply | null>) => {
    unanswered--;
    wakeReader();
    if (!open) return;
    if (!outcome.ok) {
      // The shared COMMIT failed: nothing of this message is durable and the session's view of
      // the run cannot be trusted; the exit handler settles the run from what is committed.
      open = false;
      hooks.stop(worker, "protocolRejected", "protocolRejected: the state commit failed");
      return;
    }
    const reply = outcome.value;
    if (reply === null) return;
    if (reply.outcome === "claimLost") {
      if (claimLostSent) return;
      claimLostSent = true;
    }
    send(reply);
  };
  // Resolves once `ready()` holds: woken by every settle and by the drain. The
  // reader waits here instead of reading ahead (backpressure).
  const until = async (ready: () => boolean): Promise<void> => {
    while (!ready()) await new Promise<void>((resolve) => wake = resolve);
  };
  const room = () => !open || channel.destroyed || unanswered < MAX_UNANSWERED && !needDrain;
  // Every frame read so far settled and its reply handed to the channel (tasks always settle:
  // their group commits within LINGER_MS at most).
  const answered = () => unanswered === 0;
  try {
    for await (const frame of readerOf(worker.spawned).frames()) {
      if (!frame.ok) {
        hooks.stop(worker, "protocolRejected", `protocolRejected: ${frame.error.code}`);
        break;
      }
      await readRegistrationTable(worker, frame.value);
      // Answered inside the next group commit, with the frames of every worker read this turn.
      unanswered++;
      settleAfterNextCommit(
        ctx.store,
        () => answer(ctx, worker, hooks, frame, receipts),
        closesPureAttempt(worker, frame.value),
        settle,
      );
      if (!room()) await until(room);
      if (!open) break;
      // The epoch's last word: a kept process now belongs to the prepared children.
      if ((frame.value as { kind?: unknown } | null)?.kind === "worker.exiting") {
        await until(answered);
        if (isKept(worker)) break;
      }
    }
  } catch {
    // A channel error ends the session; the exit handler classifies what happened.
  }
  await until(answered);
}

/**
 * A pure node's close: its worker sends the next pure node's `node.started` right behind it
 * without waiting, so the commit lingers briefly to take both (a scheduling hint only).
 */
function closesPureAttempt(worker: ActiveWorker, value: unknown): boolean {
  const kind = (value as { kind?: unknown } | null)?.kind;
  return (kind === "node.finished" || kind === "node.failed") &&
    worker.openAttempt?.effect === "pure";
}

function answer(
  ctx: HostContext,
  worker: ActiveWorker,
  hooks: SessionHooks,
  frame: { value: unknown; line?: Uint8Array },
  receipts: Map<string, WorkerReply>,
): WorkerReply | null {
  const { value } = frame;
  // Hand-written checks first for the hot kinds (same verdicts as the schemas, which remain
  // the reference and run whenever the fast check is not sure).
  const fastHeader = fastWorkerHeader(value);
  const header = fastHeader ? { ok: true as const, value: fastHeader } : parseWorkerHeader(value);
  if (!header.ok) {
    const messageId = replyableId(value);
    hooks.stop(worker, "protocolRejected", "protocolRejected: invalid message header");
    return messageId === null ? null : rejectedReply(messageId, "protocolRejected", header.error);
  }
  const { messageId, kind } = header.value;
  const stale = staleness(header.value, worker);
  if (stale !== null || isReleasedUnsettled(worker) || stopReasonOf(worker) !== null) {
    hooks.stop(worker, stopReasonOf(worker) ?? "claimLost", `claimLost: ${stale ?? "released"}`);
    return claimLostReply(messageId, stale ?? "the run's claim was released");
  }
  const remembered = receipts.get(messageId);
  if (remembered) return remembered;
  if (isSettled(worker) && kind !== "worker.exiting" && kind !== "worker.progress") {
    return rejectedReply(messageId, "protocolRejected", "the run already reached a durable end");
  }
  const fastPayload = fastHeader &&
    fastWorkerPayload(kind, (value as { payload?: unknown }).payload);
  const parsed = fastPayload
    ? { ok: true as const, value: { ...header.value, payload: fastPayload } }
    : parseWorkerPayload(header.value, value);
  if (!parsed.ok) {
    hooks.stop(worker, "protocolRejected", `protocolRejected: invalid ${kind} payload`);
    return rejectedReply(messageId, "protocolRejected", parsed.error);
  }
  const message = parsed.value as WorkerMessage;
  if (kind === "node.started" && hooks.parkedAtBoundary(worker)) {
    return claimLostReply(
      messageId,
      "the host is stopping: the run parked at its last durable boundary",
    );
  }
  // Over the bytes as received: the worker sends canonical JSON, so this is `fingerprint(message)`
  // without encoding the message again (a retry resends the same bytes).
  const requestFingerprint = `sha256:${sha256Hex(frame.line ?? fastCanonicalJson(message))}`;

  let applied: Applied;
  // Inside the group, before the shared COMMIT: a kill here loses this message (and any other
  // message of the group) before anything of it is durable.
  crashPoint(`host.${kind}.beforeCommit`);
  try {
    applied = applyWorkerMessage(ctx, worker, message, {
      expectedRevision: message.expectedRevision,
      // Receipts of worker messages live in their events, keyed by the message id alone.
      receipt: { requestId: messageId, requestFingerprint },
    });
  } catch (error) {
    // A message id is stored with its receipt in the transition's own transaction, which
    // therefore refuses a retry of a committed message (duplicate id, or an older revision):
    // only then is the stored receipt read, so the common case costs no extra query.
    const retried = storedAnswer(ctx, worker, message, messageId, requestFingerprint);
    if (retried) return retried;
    if (error instanceof ClaimLostError) {
      releaseClaim(worker);
      hooks.stop(worker, "claimLost", `claimLost: ${error.reason}`);
      return claimLostReply(messageId, `the run claim was lost: ${error.reason}`);
    }
    const code = (error as { failureClass?: FailureClass }).failureClass ?? "protocolRejected";
    return rejectedReply(messageId, code, error instanceof Error ? error.message : String(error));
  }
  if (
    kind === "worker.exiting" && !isKept(worker) && reusable(message) && hooks.keepPrepared(worker)
  ) {
    keep(worker);
    applied = { ...applied, result: { prepared: true } };
  }
  const reply = workerReply({
    messageId,
    outcome: "accepted",
    revision: applied.revision,
    ...(applied.factsChunk ? { factsChunk: applied.factsChunk } : {}),
    ...(applied.result !== undefined ? { result: applied.result } : {}),
  });
  // Only recent small replies are remembered (one proposal is in flight at a time, so a retry
  // is of a recent message): a long run must not grow the host's memory with every reply. A
  // facts piece is never kept: the stream has moved on.
  if (!applied.factsChunk) {
    receipts.set(messageId, reply);
    if (receipts.size > REMEMBERED_REPLIES) receipts.delete(receipts.keys().next().value!);
  }
  // Timers and scheduler wake-ups only once the message is durable (after the shared COMMIT).
  afterGroupCommit(ctx.store, () => {
    crashPoint(`host.${kind}.afterCommit`);
    if (kind === "worker.ready") hooks.onReady(worker);
    if (kind === "node.started") hooks.onAttemptStarted(worker);
    if (applied.closedAttempt) hooks.onAttemptClosed(worker);
  });
  return reply;
}

/** A worker that loaded many instances of its workflow asks not to be kept (fresh-instances.ts). */
function reusable(message: WorkerMessage): boolean {
  return (message.payload as { reusable?: boolean }).reusable !== false;
}

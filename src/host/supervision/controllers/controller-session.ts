/**
 * The host's end of one controller worker's fd-3 channel. Unlike a run worker's, proposals of
 * several reconciles are handled concurrently (a child workflow's resolve must not hold up the
 * others), at most `MAX_IN_FLIGHT` at once (reading pauses beyond that: backpressure). For each
 * frame: the header and payload schema, the worker epoch, then for a reconcile's proposal its
 * reconcile id (an unknown or ended one is answered `claimLost`), then the transition under the
 * reconcile's claim, then the reply with the same `messageId`.
 */
import type { JsonValue } from "../../../protocol/canonical-json.ts";
import {
  type ControllerMessage,
  parseControllerFrame,
  RECONCILE_KINDS,
} from "../../../protocol/controller-worker.ts";
import {
  claimLostReply,
  rejectedReply,
  replyableId,
  type WorkerReply,
  workerReply,
} from "../../../protocol/worker-reply.ts";
import { crashPoint } from "../../../base/crash-point.ts";
import { ControllerRefusal } from "../../../state/controllers/errors.ts";
import { ClaimLostError, TransitionError } from "../../../state/errors.ts";
import { readerOf } from "../children/spawn-child.ts";
import { staleness } from "../children/epoch-fence.ts";
import { type ActiveReconcile, type ControllerWorker, writeToWorker } from "./controller-worker.ts";
import { isControllerLive } from "./controller-life.ts";

const MAX_IN_FLIGHT = 64;

export interface ControllerSessionHooks {
  /** `controller.ready`: true when the PID is the process the host started. */
  onReady(worker: ControllerWorker, pid: number): boolean;
  onBlocked(worker: ControllerWorker, reason: "sourceChanged" | "loadFailed", detail: string): void;
  /** A proposal of one live reconcile; resolves with the reply's `result`. */
  onReconcileMessage(
    worker: ControllerWorker,
    reconcile: ActiveReconcile,
    message: Extract<ControllerMessage, { reconcileId?: string }>,
  ): Promise<JsonValue | undefined>;
  /** The worker reported the end of a reconcile the host had already ended (deadline). */
  onLateFinish(worker: ControllerWorker, reconcile: ActiveReconcile): void;
  /** The worker broke the protocol: stop it. */
  onViolation(worker: ControllerWorker, detail: string): void;
}

export async function serveControllerChannel(
  worker: ControllerWorker,
  hooks: ControllerSessionHooks,
): Promise<void> {
  const channel = worker.spawned.channel;
  const seen = new Set<string>();
  let inFlight = 0;
  let release: (() => void) | null = null;
  const reply = (answer: WorkerReply) => writeToWorker(channel, answer).catch(() => {});
  try {
    for await (const frame of readerOf(worker.spawned).frames()) {
      if (!frame.ok) {
        hooks.onViolation(worker, `protocolRejected: ${frame.error.code}`);
        break;
      }
      const parsed = parseControllerFrame(frame.value);
      if (!parsed.ok || staleness(parsed.value, worker) !== null) {
        hooks.onViolation(worker, "protocolRejected: invalid controller message");
        const messageId = replyableId(frame.value);
        const why = parsed.ok ? "the worker epoch is not this one" : parsed.error;
        if (messageId !== null) void reply(rejected(messageId, why));
        continue;
      }
      const message = parsed.value;
      if (seen.has(message.messageId)) {
        void reply(rejected(message.messageId, "the message id was already used"));
        continue;
      }
      seen.add(message.messageId);
      inFlight++;
      void handle(worker, hooks, message).then(reply).finally(() => {
        inFlight--;
        release?.();
      });
      if (inFlight >= MAX_IN_FLIGHT) {
        await new Promise<void>((resolve) => (release = resolve));
        release = null;
      }
    }
  } catch {
    // A channel error ends the session; the exit handler settles the reconciles.
  }
}

async function handle(
  worker: ControllerWorker,
  hooks: ControllerSessionHooks,
  message: ControllerMessage,
): Promise<WorkerReply> {
  const id = message.messageId;
  if (message.kind === "controller.ready") {
    if (isControllerLive(worker) || !hooks.onReady(worker, message.payload.pid)) {
      hooks.onViolation(worker, "protocolRejected: controller.ready names another process");
      return rejected(id, "controller.ready names another process than the one the host started");
    }
    return accepted(id);
  }
  if (message.kind === "controller.blocked") {
    hooks.onBlocked(worker, message.payload.reason, message.payload.detail);
    return accepted(id);
  }
  if (!RECONCILE_KINDS.has(message.kind) || message.reconcileId === undefined) {
    return rejected(id, `${message.kind} needs a reconcile id`);
  }
  const reconcile = worker.reconciles.get(message.reconcileId);
  if (!reconcile || reconcile.ended) {
    if (reconcile && message.kind === "reconcile.finished") hooks.onLateFinish(worker, reconcile);
    return claimLostReply(
      id,
      "the reconcile's claim ended (deadline, or another reconcile took over)",
    );
  }
  crashPoint(`host.${message.kind}.beforeCommit`);
  try {
    const result = await hooks.onReconcileMessage(worker, reconcile, message);
    crashPoint(`host.${message.kind}.afterCommit`);
    return accepted(id, result);
  } catch (error) {
    if (error instanceof ClaimLostError) {
      reconcile.ended = true;
      return claimLostReply(id, `the reconcile's claim was lost: ${error.reason}`);
    }
    if (error instanceof ControllerRefusal) return rejected(id, error.message, error.code);
    if (error instanceof TransitionError) return rejected(id, error.message, "invalidTransition");
    const name = error instanceof Error ? error.name : "error";
    return rejected(id, `${message.kind} failed inside the host: ${name}`, "internal");
  }
}

function accepted(messageId: string, result?: JsonValue): WorkerReply {
  return workerReply({
    messageId,
    outcome: "accepted",
    ...(result !== undefined ? { result } : {}),
  });
}

function rejected(messageId: string, message: string, code = "protocolRejected"): WorkerReply {
  return rejectedReply(messageId, code, message);
}

/**
 * The next epoch's first step, proposed ahead inside an acceptance. A run's prepared process that
 * accepts a submission may also decide and render the step the acceptance leads to (the next model
 * step's `node.started` and `interaction.requested`) under the header of the epoch the host named
 * in its validate request (the next claim generation and a worker epoch it chose), before anything
 * of it is durable. The host commits those messages in the acceptance's own group commit, right
 * after the acceptance and that epoch's launch claim and `worker.live` (accepted-launch.ts): the
 * acceptance, the claim, the start and the request become durable together, and the session's
 * next step is claimable the moment the submission is accepted.
 *
 * They count only when the facts they were decided from are exactly the facts the acceptance
 * makes: the run's revision before the acceptance is the one the validate request's facts were
 * read at (nothing else changed the run since), the launch took exactly the named generation and
 * epoch (each message is fenced against them like any message of that epoch), and every message
 * applies as it would from the epoch's own channel (the same transitions, receipts and checks:
 * the open attempt, its deadline, the budget). Otherwise all of them are dropped in one savepoint
 * and the epoch runs as any other: its envelope follows, `worker.ready`, its own start.
 */
import { crashPoint } from "../../base/crash-point.ts";
import { sha256Hex } from "../../protocol/canonical-json.ts";
import { fastCanonicalJson } from "../../protocol/fast-canonical-json.ts";
import {
  parseWorkerHeader,
  parseWorkerPayload,
  type WorkerMessage,
} from "../../protocol/worker-messages.ts";
import { fastWorkerHeader, fastWorkerPayload } from "../../protocol/worker-message-fast.ts";
import { readRunRow } from "../../state/protected-write.ts";
import { writeTransaction } from "../../state/transactions.ts";
import { logError } from "../host-log.ts";
import type { ActiveWorker } from "../supervision/active-worker.ts";
import type { HostContext } from "../host-context.ts";
import { staleness } from "../supervision/children/epoch-fence.ts";
import { markLive, restoreClaim } from "../supervision/worker-life.ts";
import { applyWorkerMessage } from "./message-handlers.ts";

/** The messages a prepared process proposed ahead, and what the host knows of their facts. */
export interface AheadStart {
  /** The epoch the validate request named. */
  generation: number;
  workerEpoch: string;
  /** The run's revision when the validate request's facts were read; null when not known. */
  factsRevision: number | null;
  /** The messages as received (checked here); none when the process sent none. */
  messages: readonly unknown[];
  /** Set once they are applied in the group (the verdict's reply says so after its COMMIT). */
  committed: boolean;
}

/** The one shape proposed ahead: a model step's start and its request, in that order. */
const AHEAD_KINDS = ["node.started", "interaction.requested"] as const;

/**
 * The run's revision before the acceptance, read inside the group: the messages can count only
 * when it is the revision their facts were read at.
 */
export function factsStillCurrent(ctx: HostContext, runId: string, ahead: AheadStart): boolean {
  return ahead.factsRevision !== null &&
    readRunRow(ctx.store, runId)?.revision === ahead.factsRevision;
}

/**
 * Applies the messages under `worker` (the epoch just launched, recorded live) inside the current
 * group commit, as one savepoint: all or none. True when applied: the epoch answered (no
 * `worker.ready` follows) and the run waits on the next request once the group commits.
 */
export function applyAheadStart(
  ctx: HostContext,
  worker: ActiveWorker,
  ahead: AheadStart,
): boolean {
  if (worker.generation !== ahead.generation || worker.workerEpoch !== ahead.workerEpoch) {
    return false;
  }
  const messages = readAhead(worker, ahead.messages);
  if (typeof messages === "string") {
    ctx.log("speculation.refused", { run: worker.runId, why: messages });
    return false;
  }
  const before = { openAttempt: worker.openAttempt, claim: worker.life.claim };
  try {
    writeTransaction(ctx.store, () => {
      for (const message of messages) {
        applyWorkerMessage(ctx, worker, message, {
          expectedRevision: message.expectedRevision,
          receipt: {
            requestId: message.messageId,
            requestFingerprint: `sha256:${sha256Hex(fastCanonicalJson(message))}`,
          },
        });
      }
      crashPoint("host.aheadStart.applied");
    });
  } catch (error) {
    // Rolled back to its savepoint: the epoch's memory goes back with it.
    worker.openAttempt = before.openAttempt;
    restoreClaim(worker, before.claim);
    ctx.log("speculation.dropped", { run: worker.runId, error: logError(error) });
    return false;
  }
  markLive(worker);
  ahead.committed = true;
  return true;
}

type Payload = { payload?: unknown };

/** The messages, each header fenced against `worker` before its payload is read. */
function readAhead(worker: ActiveWorker, raw: readonly unknown[]): WorkerMessage[] | string {
  if (raw.length !== AHEAD_KINDS.length) return "not a start and a request";
  const messages: WorkerMessage[] = [];
  for (const [i, value] of raw.entries()) {
    // The hand-written checks first, as the worker session does (the start is a hot kind).
    const fast = fastWorkerHeader(value);
    const header = fast ? { ok: true as const, value: fast } : parseWorkerHeader(value);
    if (!header.ok) return `invalid header (${header.error})`;
    if (header.value.kind !== AHEAD_KINDS[i]) return "not a start and a request";
    const stale = staleness(header.value, worker);
    if (stale !== null) return stale;
    const payload = fast && fastWorkerPayload(header.value.kind, (value as Payload).payload);
    const parsed = payload
      ? { ok: true as const, value: { ...header.value, payload } }
      : parseWorkerPayload(header.value, value);
    if (!parsed.ok) return `invalid ${header.value.kind} (${parsed.error})`;
    messages.push(parsed.value as WorkerMessage);
  }
  return messages;
}

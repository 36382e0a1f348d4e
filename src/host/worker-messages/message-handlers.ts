/**
 * What each accepted worker message commits. One state transition per message, all under the
 * run claim the host holds for this worker; the worker never writes. `interaction.accepted` and
 * `interaction.rejected` come only from validation children (validation.ts) and are refused on a
 * run worker's channel with a clear `protocolRejected` error.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { Applied } from "./applied.ts";
import { HumanDecisionRequestSchema } from "../../protocol/decision-request.ts";
import { WorkflowFailureError } from "../../protocol/failures.ts";
import { parseWith } from "../../protocol/schema-issues.ts";
import type { WorkerMessage, WorkerMessageOf } from "../../protocol/worker-messages.ts";
import { readRunRow, type WorkerWriteOptions } from "../../state/protected-write.ts";
import { afterGroupCommit } from "../../state/transactions.ts";
import {
  recordNodeFailed,
  recordNodeFinished,
  recordNodeStarted,
  recordNodeUpdate,
} from "../../state/transitions/node-attempts.ts";
import {
  reserveEffect,
  type ReserveEffectResult as EffectReservation,
  settleEffect,
} from "../../state/transitions/effects.ts";
import { completeRun, failRun, timeOutRun } from "../../state/transitions/run-end.ts";
import { markWorkerLive } from "../../state/transitions/run-launch.ts";
import { blockRun, waitRun } from "../../state/transitions/run-park.ts";
import { requestPresentation } from "../../state/transitions/turn-intents.ts";
import { requestInteraction } from "../../state/transitions/interactions.ts";
import { StepContractSchema } from "../../protocol/step-contract-schema.ts";
import { describeIssues } from "../../protocol/schema-issues.ts";
import * as v from "valibot";
import type { HostContext } from "../host-context.ts";
import type { ActiveWorker } from "../supervision/active-worker.ts";
import { startFacts } from "./facts-stream.ts";
import { applyProgress } from "./worker-progress.ts";
import { parkOverBudget } from "./budget-park.ts";
import { formatStartIdentity } from "../../os/process-identity.ts";
import { isLaunching, launchedLive, markLive, markSettled } from "../supervision/worker-life.ts";

/** The worker's answer to `effect.reserve`: what to do with the effect. */
function reservationAnswer(result: EffectReservation): JsonValue {
  return result.decision === "apply"
    ? { effectId: result.effectId, state: "reserved" }
    : result.decision === "adopt"
    ? { effectId: result.effectId, state: result.state, receipt: result.receipt ?? null }
    : { effectId: result.effectId, state: result.state };
}

/**
 * Applies `message` under the worker's claim. `write` carries the expected revision and the
 * message receipt, both checked and stored inside the transition's own transaction.
 */
export function applyWorkerMessage(
  ctx: HostContext,
  worker: ActiveWorker,
  message: WorkerMessage,
  write: WorkerWriteOptions,
): Applied {
  const { store } = ctx;
  const claim = worker.claim;
  switch (message.kind) {
    case "worker.ready":
      return markReady(ctx, worker, message, write);
    case "node.started": {
      const { attemptId } = attemptOf(message);
      const p = message.payload;
      const { revision } = recordNodeStarted(store, claim, {
        ...write,
        attemptId,
        nodeId: p.nodeId,
        nodeKind: p.nodeKind,
        effect: p.effect,
        deadlineAt: p.deadlineAt,
      });
      worker.openAttempt = {
        attemptId,
        nodeId: p.nodeId,
        effect: p.effect,
        deadlineAt: p.deadlineAt,
      };
      return { revision, closedAttempt: false };
    }
    case "node.update": {
      const { attemptId } = attemptOf(message);
      const p = message.payload;
      // With its receipt, so a replay gets the first answer and is not counted twice.
      const { revision } = recordNodeUpdate(store, claim, {
        ...write,
        attemptId,
        type: p.type,
        key: p.key ?? "",
        data: p.data,
        nodeId: worker.openAttempt?.attemptId === attemptId ? worker.openAttempt.nodeId : undefined,
      });
      return { revision, closedAttempt: false };
    }
    case "node.finished": {
      const { attemptId } = attemptOf(message);
      const { revision } = recordNodeFinished(store, claim, {
        ...write,
        attemptId,
        output: message.payload.output,
        ...(message.payload.usage ? { usage: message.payload.usage } : {}),
        ...(message.payload.submissions ? { submissions: message.payload.submissions } : {}),
      });
      worker.openAttempt = null;
      return { revision, closedAttempt: true };
    }
    case "notification.requested": {
      // A notify node: its attempt finishes and its message is enqueued in one commit.
      const { attemptId } = attemptOf(message);
      const { kind, message: text } = message.payload;
      const { revision } = recordNodeFinished(store, claim, {
        ...write,
        attemptId,
        output: { kind, message: text },
        notification: { kind, message: text },
      });
      worker.openAttempt = null;
      return { revision, closedAttempt: true };
    }
    case "presentation.requested": {
      const { revision } = requestPresentation(store, claim, {
        ...write,
        prompt: message.payload.prompt,
      });
      return { revision, closedAttempt: false };
    }
    case "node.failed": {
      const { attemptId } = attemptOf(message);
      const { revision } = recordNodeFailed(store, claim, {
        ...write,
        attemptId,
        outcome: message.payload.outcome,
        error: message.payload.error,
        ...(message.payload.usage ? { usage: message.payload.usage } : {}),
        ...(message.payload.submissions ? { submissions: message.payload.submissions } : {}),
      });
      worker.openAttempt = null;
      return { revision, closedAttempt: true };
    }
    case "run.parked":
      return park(ctx, worker, message, write);
    case "run.finished": {
      const p = message.payload;
      const { revision } = p.state === "completed"
        ? completeRun(store, claim, { ...write, output: p.output })
        : p.state === "failed"
        ? failRun(store, claim, { ...write, error: p.error })
        : timeOutRun(store, claim, { ...write, error: p.error });
      markSettled(worker);
      return { revision, closedAttempt: true };
    }
    case "effect.reserve":
      return reserve(ctx, worker, message, write);
    case "effect.settle":
      return settleEffectOf(ctx, worker, message, write);
    case "worker.progress":
      return applyProgress(ctx, worker, message, write);
    case "interaction.requested":
      return requestStep(ctx, worker, message, write);
    case "worker.exiting":
      worker.diagnostic = `exiting: ${message.payload.reason}${
        message.payload.detail ? `: ${message.payload.detail}` : ""
      }`;
      return { closedAttempt: false };
    default:
      throw refuse(`${message.kind} is not available yet in this version of the host`);
  }
}

/** `worker.ready` from the process the host started: the run is live, its facts follow. */
function markReady(
  ctx: HostContext,
  worker: ActiveWorker,
  message: WorkerMessageOf<"worker.ready">,
  write: WorkerWriteOptions,
): Applied {
  const { store } = ctx;
  const claim = worker.claim;
  if (!isLaunching(worker)) throw refuse("worker.ready was already accepted for this epoch");
  const identity = worker.spawned.identity;
  if (identity === null || message.payload.pid !== identity.pid) {
    throw refuse("worker.ready names another process than the one the host started");
  }
  // Recorded live with its launch claim (accepted-launch.ts): nothing to commit, the run's
  // revision as it stands.
  const { revision } = launchedLive(worker)
    ? { revision: readRunRow(store, worker.runId)!.revision }
    : markWorkerLive(store, claim, {
      ...write,
      workerEpoch: worker.workerEpoch,
      pid: identity.pid,
      startIdentity: formatStartIdentity(identity),
    });
  markLive(worker);
  return { revision, factsChunk: startFacts(ctx, worker), closedAttempt: false };
}

/** `effect.reserve`: the reservation, quoted in the receipt so that a replay answers the same. */
function reserve(
  ctx: HostContext,
  worker: ActiveWorker,
  message: WorkerMessageOf<"effect.reserve">,
  write: WorkerWriteOptions,
): Applied {
  const { store } = ctx;
  const claim = worker.claim;
  const { attemptId } = attemptOf(message);
  const p = message.payload;
  const { revision, result } = reserveEffect(store, claim, {
    ...write,
    // The stored receipt quotes the reservation, so a durable replay answers the same.
    ...(write.receipt
      ? {
        receipt: {
          ...write.receipt,
          receipt: ({ result }) => ({
            kind: message.kind,
            result: reservationAnswer(result as EffectReservation),
          }),
        },
      }
      : {}),
    attemptId,
    effectType: p.effectType,
    idempotencyKey: p.idempotencyKey,
    requestFingerprint: p.requestFingerprint,
    resource: p.resource,
  });
  return { revision, result: reservationAnswer(result), closedAttempt: false };
}

/** `effect.settle`: the worker reports an applied or rejected effect (never an ambiguous one). */
function settleEffectOf(
  ctx: HostContext,
  worker: ActiveWorker,
  message: WorkerMessageOf<"effect.settle">,
  write: WorkerWriteOptions,
): Applied {
  const { store } = ctx;
  const claim = worker.claim;
  attemptOf(message);
  const p = message.payload;
  if (p.outcome !== "applied" && p.outcome !== "rejected") {
    throw refuse(`effect.settle with outcome ${p.outcome} is for the host to decide`);
  }
  const { revision } = settleEffect(store, claim, {
    ...write,
    effectId: p.effectId,
    outcome: p.outcome,
    ...(p.receipt !== undefined ? { effectReceipt: p.receipt } : {}),
    ...(p.error ? { errorCode: p.error.code } : {}),
  });
  return { revision, closedAttempt: false };
}

/**
 * An interactive model step: the worker committed `node.started` (with the deadline) and now
 * proposes the step contract. The run waits for its origin Pi session with no worker and no
 * claim; the worker exits after this reply.
 */
function requestStep(
  ctx: HostContext,
  worker: ActiveWorker,
  message: WorkerMessageOf<"interaction.requested">,
  write: WorkerWriteOptions,
): Applied {
  const p = message.payload;
  const open = worker.openAttempt;
  if (open === null || open.attemptId !== message.attemptId || open.nodeId !== p.nodeId) {
    throw refuse("interaction.requested must name the open attempt and its node");
  }
  const contract = v.safeParse(StepContractSchema, p.contract);
  if (!contract.success) {
    throw refuse(
      `interaction.requested carries an invalid step contract: ${
        describeIssues(contract.issues, "contract")
      }`,
    );
  }
  const c = contract.output;
  if (
    c.runId !== worker.runId || c.step !== p.nodeId || c.attempt !== open.attemptId ||
    c.kind !== p.requestKind || c.deadlineAt !== p.deadlineAt
  ) {
    throw refuse("the step contract names another run, step, attempt, kind or deadline");
  }
  if (c.kind !== "agent" && c.kind !== "assistantMessage") {
    throw refuse(`interaction.requested of kind ${p.requestKind} is not a model step`);
  }
  const { revision } = requestInteraction(ctx.store, worker.claim, {
    ...write,
    attemptId: open.attemptId,
    nodeId: p.nodeId,
    kind: c.kind,
    contract: p.contract,
    deadlineAt: p.deadlineAt,
  });
  markSettled(worker);
  worker.openAttempt = null;
  // The attempt's deadline is now enforced with no worker alive (once it is committed). The
  // timer reads its due times again at the next turn: a submit's answer that names this step,
  // committed in the same group, leaves first.
  afterGroupCommit(ctx.store, () => setImmediate(() => ctx.deadlinesChanged?.()));
  return { revision, closedAttempt: true };
}

function park(
  ctx: HostContext,
  worker: ActiveWorker,
  message: WorkerMessageOf<"run.parked">,
  write: WorkerWriteOptions,
): Applied {
  const p = message.payload;
  if (p.reason === "checkpoint" || p.reason === "humanDecision") {
    const attemptId = message.attemptId;
    const open = worker.openAttempt;
    if (attemptId === undefined || open === null || open.attemptId !== attemptId) {
      throw refuse("run.parked for a checkpoint must name the open attempt");
    }
    // The host checks answers against this request later without workflow code: it must parse.
    let timeoutDefault: { afterMs: number; response: JsonValue } | null = null;
    if (p.reason === "humanDecision") {
      const parsed = parseWith(HumanDecisionRequestSchema, p.request, "request");
      if (!parsed.ok) throw refuse(`run.parked for a human decision: ${parsed.error}`);
      timeoutDefault = parsed.value.onTimeout as typeof timeoutDefault;
    } else if (p.answerSchema !== undefined && p.reason !== "checkpoint") {
      throw refuse("run.parked: only a checkpoint declares an answer schema");
    }
    // A person's decision starts no model turn (the spec): only a checkpoint is presented.
    if (p.presentation !== undefined && p.reason !== "checkpoint") {
      throw refuse("run.parked: only a checkpoint has a presentation");
    }
    const { revision } = waitRun(ctx.store, worker.claim, {
      ...write,
      attemptId,
      nodeId: open.nodeId,
      kind: p.reason,
      request: p.request ?? null,
      answerSchema: p.answerSchema as JsonValue | undefined,
      timeoutDefault,
      ...(p.presentation ? { presentation: p.presentation } : {}),
    });
    markSettled(worker);
    worker.openAttempt = null;
    // The waiting attempt's deadline and the decision's default now wait for the host timer.
    afterGroupCommit(ctx.store, () => ctx.deadlinesChanged?.());
    return { revision, closedAttempt: true };
  }
  if (p.reason === "budgetExceeded") return parkOverBudget(ctx, worker, write);
  if (p.reason === "workflowSourceChanged" || p.reason === "effectAmbiguous") {
    const { revision } = blockRun(ctx.store, worker.claim, {
      ...write,
      runId: worker.runId,
      reason: p.reason,
      detail: p.detail ?? p.reason,
    });
    markSettled(worker);
    return { revision, closedAttempt: true };
  }
  throw refuse(`run.parked with reason ${p.reason} is not available yet`);
}

function attemptOf(message: WorkerMessage): { attemptId: string } {
  if (message.attemptId === undefined) throw refuse(`${message.kind} needs an attempt id`);
  return { attemptId: message.attemptId };
}

function refuse(detail: string): WorkflowFailureError {
  return new WorkflowFailureError("protocolRejected", detail);
}

/**
 * A run's prepared process proposes the next epoch's first step ahead (the host's
 * speculative-start.ts commits or drops it). Its validate request names the epoch an acceptance
 * launches in it (`next`: the next claim generation and a worker epoch); once the submission is
 * accepted the process decides, in that epoch's own fresh module instance, what the epoch would
 * do first from the facts the acceptance makes (the validated attempt `ok` with its output). When
 * that is an interactive model step it renders the step's contract and builds the epoch's first
 * two messages, the step's `node.started` and `interaction.requested`, exactly as the epoch would
 * propose them (node-runner.ts); the verdict carries them. Anything else (a compute node, an
 * action, the run's end, a budget stop, a callback that throws) is left to the epoch itself:
 * nothing is proposed ahead.
 *
 * Nothing here is durable or external: routing, the timeout callback and the prompt are pure
 * renders of the facts. The host commits the messages only together with the acceptance and only
 * under exactly that header and those facts; otherwise the epoch runs as any other (its envelope,
 * `worker.ready`, its own start) and may use the same instance, which belongs to that generation.
 */
import { randomUUID } from "node:crypto";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { RunFacts } from "../protocol/run-facts.ts";
import type { ValidateRequest } from "../protocol/validate-messages.ts";
import { workerMessage } from "../protocol/worker-messages.ts";
import { ownBudgetStop } from "./budget-check.ts";
import type { WorkerLaunch } from "./launch.ts";
import { messageIdOf } from "./proposer.ts";
import { workerClock } from "./worker-clock.ts";
import { type LoadOutcome, MODEL_STEP_KINDS, type RunWorkflow } from "./workflow-port.ts";

const clock = workerClock();

/** What a prepared process proposed ahead for one epoch, until that epoch's envelope comes. */
export interface AheadEpoch {
  generation: number;
  workerEpoch: string;
  /** The fresh instance it ran in (the epoch's own when it runs here), or null if none taken. */
  instance: Promise<LoadOutcome> | null;
  /** Messages of the epoch sent inside the verdict. */
  sent: number;
  /** The host committed them with the acceptance: the epoch's first step is durable. */
  committed: boolean;
}

/**
 * The epoch's first messages from `facts` (the validation's) once `attemptId` is accepted with
 * `output`, in `workflow` (an instance loaded for that epoch); null when its first step is not an
 * interactive model step that can be proposed ahead.
 */
export async function firstStepAhead(
  workflow: RunWorkflow,
  launch: WorkerLaunch,
  facts: RunFacts,
  accepted: { attemptId: string; output: JsonValue },
): Promise<JsonValue[] | null> {
  if (workflow.executionMode !== "interactive") return null;
  const own = workflow.ownFacts(acceptedFacts(facts, launch.projectPath, accepted));
  const step = workflow.decideNext(own);
  if (step.kind !== "startNode" || !MODEL_STEP_KINDS.has(step.nodeKind)) return null;
  // A controller's child asks the host about its pool's budget: not ahead of time.
  if (own.budgetPool === true || ownBudgetStop(step.nodeKind, own) !== null) return null;
  const attemptId = randomUUID();
  let contract;
  let deadlineAt: number | null;
  try {
    const timeoutMs = await workflow.resolveTimeout(step.nodeId, own, attemptId);
    deadlineAt = timeoutMs === null ? null : clock.now() + timeoutMs;
    contract = await workflow.prepareModelStep(step.nodeId, own, attemptId, deadlineAt);
  } catch {
    // The epoch records the failure after its start, as node-runner.ts does.
    return null;
  }
  const header = (sequence: number) => ({
    messageId: messageIdOf(launch.workerEpoch, sequence),
    runId: launch.runId,
    generation: launch.generation,
    workerEpoch: launch.workerEpoch,
    attemptId,
  });
  const started = workerMessage("node.started", header(1), {
    nodeId: step.nodeId,
    nodeKind: step.nodeKind,
    effect: step.effect,
    deadlineAt,
  });
  const requested = workerMessage("interaction.requested", header(2), {
    nodeId: step.nodeId,
    requestKind: contract.kind,
    contract: contract as unknown as JsonValue,
    deadlineAt,
  });
  return [started, requested] as unknown as JsonValue[];
}

/** The launch of the epoch a validate request names (its header in the validation's launch). */
export function aheadLaunch(
  request: ValidateRequest & { next: NonNullable<ValidateRequest["next"]> },
): WorkerLaunch {
  return {
    ...request.launch,
    generation: request.next.generation,
    workerEpoch: request.next.workerEpoch,
  };
}

/** The facts as the acceptance commits them: the validated attempt `ok` with its output. */
function acceptedFacts(
  facts: RunFacts,
  projectPath: string,
  accepted: { attemptId: string; output: JsonValue },
): RunFacts {
  return {
    ...facts,
    projectPath,
    attempts: facts.attempts.map((attempt) =>
      attempt.attemptId === accepted.attemptId
        ? { ...attempt, state: "ok", output: accepted.output, finishedAt: clock.now() }
        : attempt
    ),
  };
}

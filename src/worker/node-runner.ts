/**
 * Executes one node as one attempt: resolve its deadline, commit `node.started` (with the
 * resolved wall-clock deadline, which the host enforces from then on even if this process
 * spins), run the callback with an abort signal that fires at the deadline or on SIGTERM, stream
 * updates, then propose the outcome. Returns the attempt as the host committed it, "parked", or
 * "requested" (an interactive model step's request: the only park a run's process may be kept
 * after).
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { FrameError, MAX_FRAME_BYTES } from "../protocol/framing.ts";
import type { AttemptFact, RunFacts } from "../protocol/run-facts.ts";
import { ClaimLostStop, type Proposal, type Proposer } from "./proposer.ts";
import { createEffectPort } from "./effect-port.ts";
import { createProcessGroupPort } from "./process-group-port.ts";
import { secretsOf } from "./secret-values.ts";
import { createStepOutput, type StepOutput, teeProcessOutput } from "./step-output.ts";
import { flushProcessOutput } from "./flush-process-output.ts";
import { StepInterrupted } from "./step-interrupted.ts";
import { createSubmissionRecorder } from "./submission-recorder.ts";
import { createUsageRecorder } from "./usage-recorder.ts";
import { MODEL_STEP_KINDS, type NodeStep, type RunWorkflow } from "./workflow-port.ts";
import { workerClock } from "./worker-clock.ts";

/** Attempt times: the system clock, or the test kit's virtual one (worker-clock.ts). */
const clock = workerClock();

/** Updates waiting for the host beyond this are dropped: progress is advisory, boundaries are not. */
const MAX_PENDING_UPDATES = 64;
/** While a node runs the worker renews its claim through the host (the host's timer backs it up). */
const HEARTBEAT_MS = 10_000;
/**
 * A checkpoint or human decision without `timeoutMs` has no deadline while it waits; building
 * its request is still work, bounded here like any node's default (15 minutes).
 */
const REQUEST_WORK_LIMIT_MS = 15 * 60_000;
const WAITING_KINDS = new Set(["checkpoint", "humanDecision"]);

/** Aborts the node that is running now (SIGTERM handler); null between nodes. */
let abortActive: ((reason: Error) => void) | null = null;

export function abortActiveNode(reason: Error): boolean {
  if (abortActive === null) return false;
  abortActive(reason);
  return true;
}

/**
 * Messages a pipelined compute node may leave unacknowledged when it starts running: its own
 * `node.started` and the starts and closes of the compute nodes before it. Bounded, so a worker
 * that runs ahead of slow commits repeats at most this much pure work after a crash or a claim
 * loss (the host reads at most MAX_UNANSWERED frames ahead, worker-session.ts). 64, not 32: with
 * 32 the worker waited for verdicts about half of a 10,000-node run while the host committed (the
 * window did not cover one group commit's round trip); 64 keeps both processes busy, and 128
 * measured no better (docs/workers.md).
 */
export const AHEAD_WINDOW = 64;

/**
 * Runs one attempt. A pure node's `node.started` is sent ahead of the verdicts before it, so the
 * host commits it with the previous node's close (one commit per node boundary). A compute node
 * then runs at once, within AHEAD_WINDOW unacknowledged messages (a pipelined pure node: it may
 * run before its start is durable; when any message of the window is refused, nothing after it
 * commits and its work is dropped: it may repeat, it is pure). Any other pure node runs only
 * once its start and every earlier message are acknowledged. An external node's start is
 * proposed only after every earlier message is acknowledged, and it runs only once that start is
 * durable. A pure node's close is sent ahead too, unless it carries a notification.
 */
export async function runNode(
  workflow: RunWorkflow,
  step: NodeStep,
  facts: RunFacts,
  proposer: Proposer,
): Promise<AttemptFact | "parked" | "requested"> {
  const attemptId = randomUUID();
  let timeoutMs: number | null = null;
  let timeoutFailure: { code: string; message: string } | null = null;
  try {
    timeoutMs = await workflow.resolveTimeout(step.nodeId, facts, attemptId);
  } catch (error) {
    // Recorded as the attempt's failure once the attempt exists (node.started first).
    timeoutFailure = {
      code: (error as { code?: unknown }).code === undefined
        ? "timeoutCallbackFailed"
        : String((error as { code: unknown }).code),
      message: error instanceof Error ? error.message : String(error),
    };
  }
  const startedAt = clock.now();
  const deadlineAt = timeoutMs === null ? null : startedAt + timeoutMs;
  const started: Proposal = {
    kind: "node.started",
    fields: { nodeId: step.nodeId, nodeKind: step.nodeKind, effect: step.effect, deadlineAt },
    attemptId,
  };
  if (
    timeoutFailure === null && workflow.executionMode === "interactive" &&
    MODEL_STEP_KINDS.has(step.nodeKind)
  ) {
    return await requestInteraction(workflow, step, facts, proposer, started, {
      startedAt,
      deadlineAt,
    });
  }
  if (step.effect === "external") await proposer.propose(started.kind, started.fields, attemptId);
  else {
    await proposer.sendAhead(started);
    if (step.nodeKind === "compute") await proposer.room(AHEAD_WINDOW);
    else await proposer.settled();
  }

  if (timeoutFailure !== null) {
    return await failStartedAttempt(proposer, step, facts, attemptId, timeoutFailure, {
      startedAt,
      deadlineAt,
    });
  }

  const controller = new AbortController();
  abortActive = (reason) => controller.abort(reason);
  const limitMs = timeoutMs ?? (WAITING_KINDS.has(step.nodeKind) ? REQUEST_WORK_LIMIT_MS : null);
  const timer = limitMs === null ? null : setTimeout(() => {
    controller.abort(new DOMException(`Node timed out after ${limitMs} ms`, "TimeoutError"));
  }, limitMs);

  let pendingUpdates = 0;
  let lost: ClaimLostStop | null = null;
  let interrupted: StepInterrupted | null = null;
  const onClaimLost = (error: ClaimLostStop) => {
    lost = error;
    controller.abort(error);
  };
  const publishUpdate = (update: { type: string; key: string; data: JsonValue }) => {
    if (lost || pendingUpdates >= MAX_PENDING_UPDATES) return;
    pendingUpdates++;
    proposer.propose("node.update", { ...update }, attemptId).then(
      () => pendingUpdates--,
      (error) => {
        pendingUpdates--;
        if (error instanceof ClaimLostStop) onClaimLost(error);
      },
    );
  };

  const heartbeat = setInterval(() => {
    proposer.propose("worker.progress", { op: "heartbeat" }).catch((error) => {
      if (error instanceof ClaimLostStop) onClaimLost(error);
    });
  }, HEARTBEAT_MS);
  heartbeat.unref();

  const usage = createUsageRecorder(proposer, attemptId, onClaimLost);
  const submissions = createSubmissionRecorder(proposer, attemptId, onClaimLost);
  const output = stepOutputOf(attemptId);
  const untee = output ? teeProcessOutput(output) : () => {};
  let result: Awaited<ReturnType<RunWorkflow["execute"]>>;
  try {
    result = await workflow.execute(step.nodeId, {
      facts,
      attemptId,
      signal: controller.signal,
      publishUpdate,
      effects: createEffectPort(proposer, facts.runId, attemptId),
      processGroups: createProcessGroupPort(proposer, onClaimLost),
      visit: step.visit,
      interruptedAttempt: interruptedAttemptOf(facts, step.nodeId),
      interrupt: (reason) => {
        interrupted ??= new StepInterrupted(reason);
        controller.abort(interrupted);
      },
      reportUsage: usage.report,
      reportSubmission: submissions.record,
      ...(output ? { output: (stream, chunk) => output.write(stream, chunk) } : {}),
    });
  } finally {
    untee();
    output?.close();
    if (timer) clearTimeout(timer);
    clearInterval(heartbeat);
    abortActive = null;
  }
  // The outcome may not outrun the step's own output: past the cap the host fails the attempt.
  await flushProcessOutput();
  if (lost) throw lost;
  // Nothing is proposed for the attempt: the worker stops and the host interrupts it.
  if (interrupted) throw interrupted;
  // The outcome carries the whole usage and an accepted submission's tally, in its own commit;
  // no report may follow it.
  const used = usage.close();
  const tally = submissions.close();
  const withUsage = used === null ? {} : { usage: used };
  const closing = { ...withUsage, ...(tally === null ? {} : { submissions: tally }) };

  const base = {
    attemptId,
    nodeId: step.nodeId,
    sequence: nextSequence(facts),
    nodeKind: step.nodeKind,
    effect: step.effect,
    startedAt,
    deadlineAt,
    ...withUsage,
  };
  if (result.outcome === "waiting") {
    // As in 0.12 the model presents a waiting checkpoint; a person's decision starts no turn
    // (the spec), and a headless run has no session to present in.
    const presentation = result.kind === "checkpoint" && workflow.executionMode === "interactive"
      ? workflow.waitingPresentation(step.nodeId, facts, result.request)
      : null;
    await proposer.propose(
      "run.parked",
      {
        reason: result.kind,
        request: result.request,
        ...(result.answerSchema !== undefined ? { answerSchema: result.answerSchema } : {}),
        ...(presentation === null ? {} : { presentation }),
      },
      attemptId,
    );
    return "parked";
  }
  // A pure node's close goes ahead: the next node's start follows it into the same commit.
  const deferrable = step.effect === "pure" &&
    (result.outcome === "failed" || result.outcome === "ok" && !result.notification);
  if (deferrable) {
    const close: Proposal = result.outcome === "ok"
      ? { kind: "node.finished", fields: { output: result.output, ...closing }, attemptId }
      : {
        kind: "node.failed",
        fields: { outcome: result.outcome, error: result.error, ...closing },
        attemptId,
      };
    if (proposer.fits(close)) {
      await proposer.sendAhead(close);
      return result.outcome === "ok"
        ? { ...base, state: "ok", output: result.output, finishedAt: clock.now() }
        : { ...base, state: result.outcome, error: result.error, finishedAt: clock.now() };
    }
  }
  if (result.outcome === "ok") {
    try {
      // A notify node's message is enqueued in the commit that finishes its attempt.
      if (result.notification) {
        await proposer.propose("notification.requested", { ...result.notification }, attemptId);
      } else {
        await proposer.propose("node.finished", { output: result.output, ...closing }, attemptId);
      }
      return { ...base, state: "ok", output: result.output, finishedAt: clock.now() };
    } catch (error) {
      if (!(error instanceof FrameError && error.code === "frameTooLarge")) throw error;
      // The output cannot cross the channel (nor fit the durable value limit): a node failure.
      result = {
        outcome: "failed",
        error: {
          code: "outputTooLarge",
          message: `The node's output is larger than the ${MAX_FRAME_BYTES} byte message limit`,
        },
      };
    }
  }
  await proposer.propose("node.failed", {
    outcome: result.outcome,
    error: result.error,
    ...closing,
  }, attemptId);
  return { ...base, state: result.outcome, error: result.error, finishedAt: clock.now() };
}

/**
 * Where the attempt's own output goes (`pi-workflows logs`): the state dir's workers directory,
 * secrets the worker holds redacted. None outside a host (no state dir).
 */
function stepOutputOf(attemptId: string): StepOutput | null {
  const stateDir = process.env.PI_WORKFLOWS_STATE_DIR;
  if (!stateDir) return null;
  // The secrets are read if the step prints: reading the whole environment costs more than
  // most compute nodes do.
  return createStepOutput(join(stateDir, "workers"), attemptId, () => secretsOf(process.env));
}

/**
 * The node's previous attempt when it was interrupted (or left running): the step is presented
 * again.
 */
function interruptedAttemptOf(facts: RunFacts, nodeId: string): string | null {
  const last = facts.attempts.at(-1);
  return last !== undefined && last.nodeId === nodeId &&
      (last.state === "interrupted" || last.state === "running")
    ? last.attemptId
    : null;
}

/** Fails an attempt whose start was proposed (`failure` came before its callback ran). */
async function failStartedAttempt(
  proposer: Proposer,
  step: NodeStep,
  facts: RunFacts,
  attemptId: string,
  failure: { code: string; message: string },
  times: { startedAt: number; deadlineAt: number | null },
): Promise<AttemptFact> {
  await proposer.propose("node.failed", { outcome: "failed", error: failure }, attemptId);
  return {
    attemptId,
    nodeId: step.nodeId,
    sequence: nextSequence(facts),
    nodeKind: step.nodeKind,
    effect: step.effect,
    state: "failed",
    error: failure,
    startedAt: times.startedAt,
    finishedAt: clock.now(),
    deadlineAt: times.deadlineAt,
  };
}

/**
 * An interactive model step: render its step contract (a pure render of the facts; the model acts
 * only on the committed request), then send `node.started` (the resolved deadline) and
 * `interaction.requested` back to back. The host applies them in that order, in one commit when
 * it reads both in one turn (else the start commits first), and answers neither before its
 * commit: a request is never durable without its attempt's deadline, and a refused start makes
 * the request refused too (it names no open attempt). This saves the round trip and the commit
 * between the two. The host makes the run wait for the origin Pi session and releases the claim;
 * this worker's epoch then ends. A prompt that cannot be rendered fails the attempt like any node
 * callback, after its start.
 */
async function requestInteraction(
  workflow: RunWorkflow,
  step: NodeStep,
  facts: RunFacts,
  proposer: Proposer,
  started: Proposal,
  times: { startedAt: number; deadlineAt: number | null },
): Promise<AttemptFact | "requested"> {
  const attemptId = started.attemptId!;
  let contract;
  try {
    contract = await workflow.prepareModelStep(step.nodeId, facts, attemptId, times.deadlineAt);
  } catch (error) {
    await proposer.propose(started.kind, started.fields, attemptId);
    const failure = {
      code: typeof (error as { code?: unknown }).code === "string"
        ? String((error as { code: string }).code).slice(0, 128)
        : "nodeFailed",
      message: (error instanceof Error ? error.message : String(error)).slice(0, 8000) ||
        "The step's prompt could not be rendered",
    };
    return await failStartedAttempt(proposer, step, facts, attemptId, failure, times);
  }
  await proposer.settled();
  await proposer.sendAhead(started);
  await proposer.sendAhead({
    kind: "interaction.requested",
    fields: {
      nodeId: step.nodeId,
      requestKind: contract.kind,
      contract: contract as unknown as JsonValue,
      deadlineAt: times.deadlineAt,
    },
    attemptId,
  });
  await proposer.settled();
  return "requested";
}

// The highest attempt sequence seen per facts object and how many attempts it covered. The
// worker's facts only grow by appending, so each call looks at the new attempts only: O(1) per
// node instead of a scan over the whole run.
const sequenceSeen = new WeakMap<RunFacts, { count: number; max: number }>();

function nextSequence(facts: RunFacts): number {
  let seen = sequenceSeen.get(facts);
  if (seen === undefined || seen.count > facts.attempts.length) {
    seen = { count: 0, max: 0 };
    sequenceSeen.set(facts, seen);
  }
  for (let i = seen.count; i < facts.attempts.length; i++) {
    seen.max = Math.max(seen.max, facts.attempts[i].sequence);
  }
  seen.count = facts.attempts.length;
  return seen.max + 1;
}

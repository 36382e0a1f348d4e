/**
 * Drives one run to its end or to a wait nobody scripted, the way a Pi session and a person
 * would: it reads the run's status, submits scripted outputs for model steps through the real
 * `interaction.submit` (the step's `validate` runs in a real validation child), answers
 * checkpoints and decisions through `checkpoint.answer` / `decision.answer`, and lets a wait run
 * into its deadline by moving the virtual clock to the host's next deadline. Between moves it
 * long-polls the session for the next commit, so it never sleeps.
 */
import { receiptOf } from "../client/command-receipt.ts";
import { isTerminalRunState } from "../state/journal.ts";
import type { HostConnection } from "../client/host-connection.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { Waiting } from "../protocol/decision-request.ts";
import type { OperationReceipt } from "../protocol/host-operations.ts";
import {
  type HumanAnswer,
  isTimeOut,
  MissingAnswerError,
  promptOf,
  type StepAnswer,
} from "./answers.ts";
import type { KitHost } from "./kit-host.ts";

type Status = OperationReceipt<"run.status">;
type Claimed = NonNullable<OperationReceipt<"interaction.claim">["interaction"]>;

interface StepMemory {
  /** Per node id: submissions made in this run, and the last one's rejection. */
  seen: Map<string, { submitted: number; rejection: string | null }>;
  /** Interactions the test let run into their deadline. */
  timedOut: Set<string>;
}

export interface DriveOptions {
  sessionId: string;
  answers: Readonly<Record<string, StepAnswer>>;
  human: Readonly<Record<string, HumanAnswer>>;
  /** Real milliseconds the whole drive may take. */
  timeoutMs: number;
}

/** Where the drive stopped: the run's state says which (final, waiting, blocked or paused). */
export async function driveRun(
  host: KitHost,
  runId: string,
  options: DriveOptions,
): Promise<Status> {
  const { connection } = host;
  const steps: StepMemory = { seen: new Map(), timedOut: new Set() };
  const humanVisits = new Map<string, number>();
  const answered = new Set<string>();
  const until = Date.now() + options.timeoutMs;
  let cursor = (await sessionWait(connection, options.sessionId, undefined, 0)).cursor;
  for (;;) {
    const status = receiptOf("run.status", await connection.request("run.status", { runId }));
    const run = status.run;
    if (isTerminalRunState(run.state) || run.blockedReason || run.paused) return status;
    let acted = false;
    if (status.interaction && !status.interaction.validating) {
      acted = await answerStep(host, runId, options, steps);
    } else if (status.waiting && run.state === "waiting" && !answered.has(attemptKey(status))) {
      const outcome = await answerHuman(host, runId, status.waiting, options.human, humanVisits);
      if (outcome === "unscripted") return status;
      answered.add(attemptKey(status));
      acted = true;
    }
    if (acted) continue;
    const left = until - Date.now();
    if (left <= 0) {
      throw new Error(
        `testWorkflow: the run did not finish within ${options.timeoutMs} ms ` +
          `(state ${run.state}, queue ${run.queueState})\n${host.log().slice(-4000)}`,
      );
    }
    cursor = (await sessionWait(connection, options.sessionId, cursor, Math.min(left, 5_000)))
      .cursor;
  }
}

function attemptKey(status: Status): string {
  return `${status.waiting!.nodeId}@${status.waiting!.attemptId}`;
}

async function sessionWait(
  connection: HostConnection,
  sessionId: string,
  cursor: number | undefined,
  waitMs: number,
) {
  return receiptOf(
    "session.wait",
    await connection.request("session.wait", {
      payload: { sessionId, ...(cursor === undefined ? {} : { cursor }), waitMs },
    }),
  );
}

/** Submits the next scripted output of the session's pending step; false: nothing to do yet. */
async function answerStep(
  host: KitHost,
  runId: string,
  options: DriveOptions,
  steps: StepMemory,
): Promise<boolean> {
  const { connection } = host;
  const claim = receiptOf(
    "interaction.claim",
    await connection.request("interaction.claim", {
      payload: { sessionId: options.sessionId },
    }),
  );
  const step = claim.interaction;
  if (!step || step.runId !== runId || step.submission?.status === "validating") return false;
  // Let run into its deadline already: the host's deadline timer is on it.
  if (steps.timedOut.has(step.interactionId)) return false;
  if (step.presentation.sessionEntryId === null) {
    receiptOf(
      "interaction.present",
      await connection.request("interaction.present", {
        runId,
        payload: {
          interactionId: step.interactionId,
          sessionId: options.sessionId,
          sessionEntryId: `kit-${step.interactionId}`,
        },
      }),
    );
  }
  const node = step.contract.step;
  const seen = steps.seen.get(node) ?? { submitted: 0, rejection: null };
  steps.seen.set(node, seen);
  if (step.submission?.status === "rejected") seen.rejection = step.submission.error?.message ?? "";
  const output = await scriptedOutput(step, options.answers[node], seen);
  if (isTimeOut(output)) {
    steps.timedOut.add(step.interactionId);
    advanceClock(host, step.contract.deadlineAt, `step "${node}"`);
    return true;
  }
  seen.submitted++;
  const receipt = receiptOf(
    "interaction.submit",
    await connection.request("interaction.submit", {
      runId,
      idempotencyKey: `kit-${step.interactionId}-${seen.submitted}`,
      payload: {
        interactionId: step.interactionId,
        nodeId: node,
        attemptId: step.contract.attempt,
        sessionId: options.sessionId,
        submission: output as JsonValue,
        waitMs: 30_000,
      },
    }),
  );
  seen.rejection = receipt.status === "rejected" ? receipt.error?.message ?? "" : null;
  return true;
}

async function scriptedOutput(
  step: Claimed,
  answer: StepAnswer | undefined,
  seen: { submitted: number; rejection: string | null },
): Promise<unknown> {
  const node = step.contract.step;
  const prompt = promptOf(step.contract);
  const rejected = seen.rejection === null
    ? ""
    : `its last scripted output was rejected by validate: ${seen.rejection}; `;
  if (answer === undefined) {
    throw new MissingAnswerError(
      node,
      prompt,
      `testWorkflow: step "${node}" asked the model, and answers has no "${node}": ` +
        'add answers["' + node + '"] with the output to submit',
    );
  }
  if (typeof answer === "function") {
    const output = await answer(prompt, {
      step: node,
      submission: seen.submitted + 1,
      rejection: seen.rejection,
      contract: step.contract,
    });
    if (output === undefined) {
      throw new MissingAnswerError(
        node,
        prompt,
        `testWorkflow: step "${node}": ${rejected}the answer function returned nothing`,
      );
    }
    return output;
  }
  if (Array.isArray(answer)) {
    if (seen.submitted < answer.length) return answer[seen.submitted];
    throw new MissingAnswerError(
      node,
      prompt,
      `testWorkflow: step "${node}": ${rejected}no scripted answer left (${answer.length} given)`,
    );
  }
  if (seen.rejection !== null) {
    throw new MissingAnswerError(
      node,
      prompt,
      `testWorkflow: step "${node}": ${rejected}give a list of answers to script a retry`,
    );
  }
  return answer;
}

/** Answers a checkpoint or decision; "unscripted" when the test gave nothing for it. */
async function answerHuman(
  host: KitHost,
  runId: string,
  waiting: Waiting,
  human: Readonly<Record<string, HumanAnswer>>,
  visits: Map<string, number>,
): Promise<"answered" | "unscripted"> {
  const given = human[waiting.nodeId];
  if (given === undefined) return "unscripted";
  const visit = visits.get(waiting.nodeId) ?? 0;
  visits.set(waiting.nodeId, visit + 1);
  let answer: unknown = Array.isArray(given) ? given[Math.min(visit, given.length - 1)] : given;
  if (typeof answer === "function") answer = await answer(waiting);
  if (isTimeOut(answer)) {
    const due = [waiting.default?.at, waiting.deadlineAt].filter((t): t is number =>
      typeof t === "number"
    );
    advanceClock(host, due.length ? Math.min(...due) : null, `${waiting.kind} "${waiting.nodeId}"`);
    return "answered";
  }
  if (waiting.kind === "humanDecision" && typeof answer === "string") answer = { choice: answer };
  const response = await host.connection.request(waiting.operation, {
    runId,
    idempotencyKey: `kit-${waiting.attemptId}`,
    payload: { nodeId: waiting.nodeId, attemptId: waiting.attemptId, answer: answer as JsonValue },
  });
  if (response.outcome !== "accepted" && response.outcome !== "adopted") {
    throw new Error(
      `testWorkflow: the host refused the answer to ${waiting.kind} "${waiting.nodeId}": ` +
        (response.error?.message ?? response.outcome),
    );
  }
  return "answered";
}

/** Moves virtual time to `due` and lets the host's deadline timer apply what fell due. */
function advanceClock(host: KitHost, due: number | null | undefined, what: string): void {
  if (host.clock === null) {
    throw new Error(`testWorkflow: ${what} is to time out, which needs clock: "virtual"`);
  }
  if (due === null || due === undefined) {
    throw new Error(`testWorkflow: ${what} is to time out, but it has no deadline`);
  }
  host.clock.advanceTo(due);
  host.deadlines.changed();
}

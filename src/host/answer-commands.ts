/**
 * `checkpoint.answer` and `decision.answer`. The answer is checked against what the waiting node
 * declared (a decision's choices and text inputs, a checkpoint's answer schema), saved with the
 * waiting run, so no workflow code runs here. Then one transaction records the answer, the
 * resolution, the receipt and the next scheduling step (the run is launchable again, in place);
 * stale attempts, second answers, the other kind and answers after the deadline are refused
 * inside it. Only after the commit does the host answer and wake the scheduler.
 */
import { type AnswerSchema, checkAnswer } from "../protocol/answer-schema.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { HumanDecisionRequestSchema } from "../protocol/decision-request.ts";
import { type HostRequest, requestFor } from "../protocol/host-request.ts";
import { parseWith } from "../protocol/schema-issues.ts";
import type { OperationReceipt } from "../protocol/host-operations.ts";
import { type HostResponse, receiptJson, receiptResponse } from "../protocol/host-response.ts";
import { AnswerRefusedError } from "../state/errors.ts";
import type { CommandReceiptInput } from "../state/host-commands.ts";
import { readRun } from "../state/queries.ts";
import { answerDecision, type WaitingKind } from "../state/transitions/decisions.ts";
import { readWaiting, type WaitingRecord } from "../state/waiting-queries.ts";
import { validateHumanResponse } from "../workflows/human-decision.ts";
import type { HumanChoices } from "../workflows/human-decision-types.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { runSummary } from "./run-summary.ts";

type Command = (
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
) => HostResponse;

export const answerCheckpointCommand: Command = (rt, request, receipt) =>
  answer(rt, request, receipt, "checkpoint");

export const answerDecisionCommand: Command = (rt, request, receipt) =>
  answer(rt, request, receipt, "humanDecision");

function answer(
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
  kind: WaitingKind,
): HostResponse {
  const runId = request.runId!;
  const operation = kind === "checkpoint" ? "checkpoint.answer" : "decision.answer";
  const { nodeId, attemptId, answer: raw } = requestFor(request, operation).payload;
  // Checked against the pending request when the answer names it; anything else (another
  // attempt, a closed decision, the other kind) is refused precisely inside the transaction.
  const waiting = readWaiting(rt.store, runId);
  const named = waiting?.attemptId === attemptId && waiting.nodeId === nodeId &&
    waiting.kind === kind;
  const recorded = named ? checkWaitingAnswer(waiting, raw) : raw;
  let body: OperationReceipt<"checkpoint.answer"> | null = null;
  const closed = answerDecision(rt.store, {
    runId,
    nodeId,
    attemptId,
    kind,
    answer: recorded,
    ownerId: rt.ownerId,
    expectedRevision: request.expectedRevision,
    receipt: {
      ...receipt,
      receipt: () => {
        const view = readRun(rt.store, runId);
        if (!view) throw new Error("Answer receipt failed: the run is missing after its change");
        body = {
          answered: {
            runId,
            nodeId,
            attemptId,
            decisionId: waiting!.decisionId,
            kind,
            resolution: "answered",
            answer: recorded,
          },
          run: runSummary(view),
        };
        return receiptJson(body);
      },
    },
  });
  rt.log("run.answered", { runId, revision: closed.revision, kind });
  rt.supervision.wake();
  rt.deadlines.changed();
  return receiptResponse(request, rt.epoch, body!, { revision: closed.revision });
}

/**
 * The answer as it will be recorded: a decision's `{choice, text?}` normalized (a bare choice
 * name is accepted; text is trimmed), a checkpoint's answer unchanged. Throws
 * `AnswerRefusedError(invalidAnswer)` naming the field that is wrong.
 */
export function checkWaitingAnswer(waiting: WaitingRecord, raw: JsonValue): JsonValue {
  const refuse = (problem: string) =>
    new AnswerRefusedError(
      "invalidAnswer",
      `Invalid answer for ${
        waiting.kind === "humanDecision" ? "human decision" : "checkpoint"
      } "${waiting.nodeId}": ${problem}`,
    );
  if (waiting.kind === "humanDecision") {
    // Validated when the run started waiting; a row that no longer parses is a host fault.
    const request = parseWith(HumanDecisionRequestSchema, waiting.request, "request");
    if (!request.ok) throw new Error(`Stored decision request is unreadable: ${request.error}`);
    const checked = validateHumanResponse(request.value.choices as HumanChoices, raw);
    if (!checked.ok) throw refuse(checked.message);
    // The normalized response is a choice and, when given, its trimmed text (never 0.12's input).
    const { choice, text } = checked.response;
    return text === undefined ? { choice } : { choice, text };
  }
  if (waiting.answerSchema !== undefined) {
    const problem = checkAnswer(waiting.answerSchema as AnswerSchema, raw);
    if (problem) throw refuse(problem);
  }
  return raw;
}

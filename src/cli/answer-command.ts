/**
 * `pi-workflows answer <runId> [<nodeId>] <json|text>`: reads what the run waits for, builds the
 * answer from what was typed (answer-input.ts) and sends `checkpoint.answer` or
 * `decision.answer` naming the waiting node and attempt. The host checks and records it; a stale,
 * second, late or malformed answer comes back refused with the host's one-line reason.
 */
import { receiptOf } from "../client/command-receipt.ts";
import type { HostConnection } from "../client/host-connection.ts";
import { canonicalJson, type JsonValue } from "../protocol/canonical-json.ts";
import type { Waiting } from "../protocol/decision-request.ts";
import { buildAnswer } from "./answer-input.ts";
import { EXIT } from "./exit-codes.ts";
import { formatRunHeadline } from "./format-run.ts";
import { type CliIo, printJson } from "./output.ts";
import type { CliCommand } from "./parse-command.ts";
import { shortRunId } from "./run-ids.ts";
import { describeRunState } from "./run-state.ts";

type AnswerCommand = Extract<CliCommand, { kind: "answer" }>;
type AnswerPayload = { nodeId: string; attemptId: string; answer: JsonValue };

export async function answerRun(
  connection: HostConnection,
  command: AnswerCommand,
  io: CliIo,
): Promise<number> {
  const status = receiptOf(
    "run.status",
    await connection.request("run.status", { runId: command.runId }),
  );
  const waiting = status.waiting as Waiting | undefined;
  let request: { operation: "checkpoint.answer" | "decision.answer"; payload: AnswerPayload };
  if (waiting) {
    request = {
      operation: waiting.kind === "humanDecision" ? "decision.answer" : "checkpoint.answer",
      // The node as typed (the host refuses another node than the waiting one).
      payload: {
        nodeId: command.nodeId ?? waiting.nodeId,
        attemptId: waiting.attemptId,
        answer: buildAnswer(waiting, command),
      },
    };
  } else {
    if (status.interaction) {
      const step = status.interaction;
      io.err(
        `Run ${command.runId} waits for its Pi session at step ${step.nodeId} (${step.nodeKind}): ` +
          "the model there answers it with the workflow tool's submit; `answer` takes " +
          "checkpoints and human decisions only",
      );
      return EXIT.refused;
    }
    // Nothing waits now. An answer to the node's last checkpoint or decision still goes to the
    // host, which says exactly why it is too late (answered, defaulted, timed out, cancelled).
    const last = status.attempts?.findLast((a) =>
      (a.nodeKind === "checkpoint" || a.nodeKind === "humanDecision") &&
      (command.nodeId === null || a.nodeId === command.nodeId)
    );
    if (!last) {
      io.err(
        `Run ${command.runId} is not waiting for an answer (it is ` +
          `${describeRunState(status.run).word}); see ` +
          `'pi-workflows status ${command.runId}'`,
      );
      return EXIT.refused;
    }
    request = {
      operation: last.nodeKind === "humanDecision" ? "decision.answer" : "checkpoint.answer",
      payload: {
        nodeId: last.nodeId,
        attemptId: last.attemptId,
        answer: command.choice ?? command.text ?? null,
      },
    };
  }
  const receipt = receiptOf(
    request.operation,
    await connection.request(request.operation, {
      runId: command.runId,
      payload: request.payload,
    }),
  );
  if (command.json) {
    printJson(io, receipt);
    return EXIT.ok;
  }
  // A run paused while it waited keeps its pause: the answer is recorded, the run goes on once
  // resumed (saying it continues would be wrong).
  io.out(
    `Answered ${receipt.answered.nodeId} with ${canonicalJson(receipt.answered.answer)}; ` +
      (receipt.run.paused
        ? `the run stays paused: 'pi-workflows resume ${
          shortRunId(receipt.run.runId)
        }' lets it go on`
        : "the run continues"),
  );
  io.out(formatRunHeadline(receipt.run));
  return EXIT.ok;
}

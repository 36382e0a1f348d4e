/**
 * Turns what a person typed after `pi-workflows answer` into the answer the host checks:
 *   checkpoint       JSON as typed (an object or array must parse), else `{"answer": "<text>"}`
 *   human decision   a choice name or label (any case), or `--choice <name>`, with
 *                    `--input <name>=<value>` for a choice that takes text; JSON objects as typed
 * The host is the authority on whether the answer fits: this only maps names and labels.
 */
import {
  AnswerTextError,
  checkpointAnswer,
  matchChoice,
  parseJsonAnswer,
} from "../render/answer-text.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { Waiting } from "../protocol/decision-request.ts";
import { UsageError } from "./exit-codes.ts";
import type { CliCommand } from "./parse-command.ts";

type AnswerCommand = Extract<CliCommand, { kind: "answer" }>;

export function buildAnswer(waiting: Waiting, command: AnswerCommand): JsonValue {
  if (waiting.kind === "checkpoint") {
    if (command.choice !== null || command.inputs.length > 0) {
      throw new UsageError(
        `--choice and --input answer a human decision; "${waiting.nodeId}" is a checkpoint: ` +
          "give JSON or text",
      );
    }
    return usage(() => checkpointAnswer(command.text!));
  }
  const choices = waiting.decision?.choices ?? {};
  let picked: string;
  if (command.choice !== null) {
    picked = command.choice;
  } else {
    const text = command.text!;
    if (/^\s*\{/.test(text)) return usage(() => parseJsonAnswer(text));
    picked = matchChoice(choices, text) ?? text;
  }
  const spec = choices[picked]?.input;
  if (command.inputs.length === 0) return { choice: picked };
  if (command.inputs.length > 1) {
    throw new UsageError("Give one --input: a choice takes at most one text input");
  }
  const [input] = command.inputs;
  if (!spec) {
    throw new UsageError(
      choices[picked]
        ? `Choice '${picked}' takes no text: leave out --input`
        : `Unknown choice '${picked}': use one of ${Object.keys(choices).join(", ")}`,
    );
  }
  if (input.name !== spec.name) {
    throw new UsageError(
      `Choice '${picked}' takes --input ${spec.name}=<text>, not '${input.name}'`,
    );
  }
  return { choice: picked, text: input.value };
}

/** The shared parsing's one-line errors as usage errors (exit 2). */
function usage(parse: () => JsonValue): JsonValue {
  try {
    return parse();
  } catch (error) {
    if (error instanceof AnswerTextError) throw new UsageError(error.message);
    throw error;
  }
}

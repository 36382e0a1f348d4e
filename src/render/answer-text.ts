/**
 * How a typed answer (`pi-workflows answer`, `/workflow answer` in Pi) becomes the answer the
 * host checks, shared by the CLI and the Pi extension:
 *   checkpoint       JSON as typed (an object or array must parse), else `{"answer": "<text>"}`
 *   human decision   JSON objects as typed; else a choice name or label (any case), or
 *                    `<choice> <text>` for a choice that takes a text input
 * The host is the authority on whether the answer fits: this only maps names and labels.
 * Failures are `AnswerTextError` with one actionable line.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { parsedJsonProblem, parseJsonText } from "../protocol/json-depth.ts";
import type { Waiting } from "../protocol/decision-request.ts";

export class AnswerTextError extends Error {
  override name = "AnswerTextError";
}

/** The answer `text` gives for what `waiting` asks. */
export function answerFromText(waiting: Waiting, text: string): JsonValue {
  if (waiting.kind === "checkpoint") return checkpointAnswer(text);
  if (/^\s*\{/.test(text)) return parseJsonAnswer(text);
  const choices = waiting.decision?.choices ?? {};
  const whole = matchChoice(choices, text);
  if (whole !== null) return { choice: whole };
  const [first] = text.trim().split(/\s+/, 1);
  const picked = matchChoice(choices, first ?? "");
  if (picked !== null && choices[picked].input) {
    return { choice: picked, text: text.trim().slice(first.length).trim() };
  }
  return { choice: text.trim() };
}

/** A checkpoint's typed answer: JSON as typed, else the text as `{"answer": text}`. */
export function checkpointAnswer(text: string): JsonValue {
  if (/^\s*[[{]/.test(text)) return parseJsonAnswer(text);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { answer: text };
  }
  // 1e999 parses, as Infinity, which no request can carry: refused here, not by the host.
  const problem = parsedJsonProblem(value);
  if (problem !== null) throw new AnswerTextError(`Invalid JSON answer: ${problem}`);
  return value as JsonValue;
}

export function parseJsonAnswer(text: string): JsonValue {
  try {
    return parseJsonText(text);
  } catch (error) {
    throw new AnswerTextError(`Invalid JSON answer: ${(error as Error).message.split("\n")[0]}`);
  }
}

/** A choice by exact name, else by label or name ignoring case. */
export function matchChoice(
  choices: Record<string, { label: string }>,
  text: string,
): string | null {
  if (Object.hasOwn(choices, text)) return text;
  const wanted = text.trim().toLowerCase();
  for (const [name, choice] of Object.entries(choices)) {
    if (name.toLowerCase() === wanted || choice.label.trim().toLowerCase() === wanted) return name;
  }
  return null;
}

/**
 * What presents a run waiting at a checkpoint in its origin session (0.12 presented a waiting
 * run): the root's `presentationPrompt` rendered by the worker, or why it could not be rendered.
 * It rides `run.parked`; the host owes the session one presentation turn for the wait.
 */
import * as v from "valibot";
import { MAX_SHORT_TEXT_CHARS, ShortTextSchema, strictObject } from "./fields.ts";

/** The longest presentation prompt (the turn's text is bounded again when it is written). */
export const MAX_PRESENTATION_PROMPT_CHARS = 65_536;

export const WaitingPresentationSchema = v.union([
  strictObject({ prompt: v.pipe(v.string(), v.maxLength(MAX_PRESENTATION_PROMPT_CHARS)) }),
  strictObject({ problem: ShortTextSchema }),
]);
export type WaitingPresentation = v.InferOutput<typeof WaitingPresentationSchema>;

/** A problem as the message carries it: one bounded line. */
export function presentationProblem(problem: string): WaitingPresentation {
  return { problem: problem.slice(0, MAX_SHORT_TEXT_CHARS) };
}

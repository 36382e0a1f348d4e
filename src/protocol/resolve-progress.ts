/**
 * What the source resolver is doing. Before each step that runs workflow code the resolver
 * child sends one progress frame ahead of its answer, so that when the child dies or hangs the
 * host can say which file and which step: "loading x.workflow.ts did not finish within 15000 ms"
 * rather than "no answer".
 */
import * as v from "valibot";
import { strictObject } from "./fields.ts";

export const RESOLVE_PROGRESS_SCHEMA = "pi-workflows.resolve-progress.v1";

export const RESOLVE_STEPS = [
  /** Finding the reference among the project's, the user's and the built-in workflows. */
  "find",
  /** Importing the workflow file: its top-level code runs. */
  "load",
  /** Importing an included workflow file. */
  "include",
  /** Checking the graph. */
  "compile",
  /** The workflow's `input` function. */
  "input",
  /** The workflow's `title` function. */
  "title",
] as const;
export type ResolveStep = (typeof RESOLVE_STEPS)[number];

export const ResolveProgressSchema = strictObject({
  schema: v.literal(RESOLVE_PROGRESS_SCHEMA),
  step: v.picklist(RESOLVE_STEPS),
  /** The file the step works on (absolute), when there is one. */
  file: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(4096))),
});
export type ResolveProgress = v.InferOutput<typeof ResolveProgressSchema>;

export function isResolveProgress(value: unknown): value is ResolveProgress {
  return v.safeParse(ResolveProgressSchema, value).success;
}

/**
 * What a `presentationPrompt` callback receives: `input` and `output`, plus the names 0.12 gave
 * the same facts (`finalOutput`, and `state` with the run's id, name, status, input, outputs,
 * results and final output), so 0.12 callbacks such as `({ state }) => state.status === ...` run
 * unchanged. It is called when the run completes (`status: "completed"`, `output` the run's
 * output) and, as in 0.12, when an interactive run waits at a checkpoint (`status: "waiting"`,
 * `state.waitingOn` the checkpoint, `output` its request: the `{summary}` or what `run()`
 * returned).
 *
 * `renderPresentation` calls it and checks what it returned: a string, or nothing to present
 * (`undefined`, `null` or blank, as 0.12 allowed); anything else is a problem the caller reports.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { RunFacts } from "../protocol/run-facts.ts";
import { MAX_PRESENTATION_PROMPT_CHARS } from "../protocol/waiting-presentation.ts";
import type { CompiledWorkflow } from "./compile.ts";
import { errorMessage } from "./errors.ts";
import { type FactsView, scopeContext } from "./facts-view.ts";
import type { PresentationContext } from "./types.ts";

/** The callback runs synchronously inside the worker's bound: nothing ever aborts it. */
const NEVER_ABORTED = new AbortController().signal;

export function presentationContext(
  wf: CompiledWorkflow,
  view: FactsView,
  facts: RunFacts,
  output: JsonValue,
  waitingOn: string | null = null,
): PresentationContext {
  const { outputs, results } = scopeContext(wf, view, facts, wf.root);
  const state = Object.freeze({
    runId: facts.runId,
    workflowName: wf.name,
    status: waitingOn === null ? "completed" as const : "waiting" as const,
    ...(waitingOn === null ? {} : { waitingOn }),
    input: facts.input,
    outputs,
    results,
    finalOutput: output,
  });
  return Object.freeze({
    input: facts.input,
    output,
    finalOutput: output,
    state,
    signal: NEVER_ABORTED,
  });
}

/** The prompt to present (null: nothing), or the problem with what the callback did. */
export type RenderedPresentation = { prompt: string | null } | { problem: string };

export function renderPresentation(
  wf: CompiledWorkflow,
  context: () => PresentationContext,
): RenderedPresentation {
  const spec = wf.definition.presentationPrompt;
  let value: unknown;
  try {
    value = typeof spec === "function" ? spec(context()) : spec;
  } catch (error) {
    return { problem: `presentationPrompt failed: ${errorMessage(error)}` };
  }
  if (typeof (value as { then?: unknown } | null)?.then === "function") {
    return {
      problem:
        "presentationPrompt returned a promise: return the text itself (from output and state)",
    };
  }
  if (value === undefined || value === null) return { prompt: null };
  if (typeof value !== "string") return { problem: "presentationPrompt must return a string" };
  if (value.length > MAX_PRESENTATION_PROMPT_CHARS) {
    return { problem: `presentationPrompt is over ${MAX_PRESENTATION_PROMPT_CHARS} characters` };
  }
  return { prompt: value.trim() === "" ? null : value };
}

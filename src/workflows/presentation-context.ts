/**
 * What a `presentationPrompt` callback receives when the run completes: `input` and `output`,
 * plus the names 0.12 gave the same facts (`finalOutput`, and `state` with the run's id, name,
 * status, input, outputs, results and final output), so 0.12 callbacks such as
 * `({ state }) => state.status === ...` run unchanged.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { RunFacts } from "../protocol/run-facts.ts";
import type { CompiledWorkflow } from "./compile.ts";
import { type FactsView, scopeContext } from "./facts-view.ts";
import type { PresentationContext } from "./types.ts";

/** The callback runs synchronously inside the worker's bound: nothing ever aborts it. */
const NEVER_ABORTED = new AbortController().signal;

export function presentationContext(
  wf: CompiledWorkflow,
  view: FactsView,
  facts: RunFacts,
  output: JsonValue,
): PresentationContext {
  const { outputs, results } = scopeContext(wf, view, facts, wf.root);
  const state = Object.freeze({
    runId: facts.runId,
    workflowName: wf.name,
    status: "completed" as const,
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

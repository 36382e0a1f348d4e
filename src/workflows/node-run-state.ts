/**
 * The `state` a node callback (and a timeout callback) receives: run-level facts, plus the
 * fields 0.12's run state had under the same names (`status`, `input`, `outputs`, `results`,
 * `currentNode`, `currentAttemptId`), so 0.12 callbacks that read them run unchanged.
 */
import type { RunFacts } from "../protocol/run-facts.ts";
import type { CompiledWorkflow } from "./compile.ts";
import { type FactsView, projectPathOf, type ScopeContext } from "./facts-view.ts";
import type { NodeRunState } from "./types.ts";

export function nodeRunState(
  wf: CompiledWorkflow,
  view: FactsView,
  facts: RunFacts,
  scope: ScopeContext,
  nodeId: string,
  attemptId: string,
): NodeRunState {
  return {
    runId: facts.runId,
    workflowName: wf.name,
    projectPath: projectPathOf(facts),
    nodeId,
    attemptId,
    visit: (view.visits.get(nodeId) ?? 0) + 1,
    stepsUsed: view.steps.length + 1,
    maxSteps: wf.maxSteps,
    status: "running",
    input: scope.input,
    outputs: scope.outputs,
    results: scope.results,
    currentNode: nodeId,
    currentAttemptId: attemptId,
  };
}

/**
 * The engine: a pure step machine over a run's committed facts. It does no I/O of its own.
 *
 * The worker drives it like this (the host commits every fact; the engine never writes):
 *
 * ```ts
 * const { workflow } = await loadWorkflow(ref, { cwd, agentDir });   // sources/load-workflow.ts
 * for (;;) {
 *   const step = decideNext(workflow, facts);            // sync, deterministic from facts
 *   if (step.kind === "complete") { propose run.finished(completed, output, presentationPrompt); break; }
 *   if (step.kind === "fail")     { propose run.finished(step.outcome, error); break; }
 *   if (step.kind === "wait")     { the run is already parked waiting: exit; }
 *   if (step.kind === "blocked")  { an external node was interrupted: propose a block
 *                                   (effectAmbiguous); exit; }
 *   // step.kind === "startNode"
 *   const timeoutMs = await resolveNodeTimeout(workflow, step.nodeId, { facts, attemptId });
 *     // throws NodeFailure(timeoutCallbackFailed): record the attempt as failed with it
 *   propose node.started(attemptId, step.nodeId, deadlineAt = now + timeoutMs or null);
 *   const result = await executeNode(workflow, step.nodeId, {
 *     facts, attemptId, signal,   // abort with a DOMException named "TimeoutError" at the
 *                                 // deadline (outcome timed_out); any other reason = cancelled
 *     publishUpdate,              // already checked and rate limited by the engine
 *     agent,                      // AgentStepExecutor (model-facing seam)
 *   });
 *   ok      -> propose node.finished(output) (+ notification.requested when result.notification)
 *   waiting -> propose run.parked waiting (result.kind, result.request)
 *   failed | timed_out | cancelled -> propose node.failed(outcome, error)
 *   facts = the committed facts from the host's reply; loop
 * }
 * ```
 *
 * Interactive model steps do not wait in the worker: `prepareAgentStep` renders the prompt for
 * `interaction.requested`, and the supervised child that validates a submission calls
 * `acceptAgentSubmission` (the node's `validate` runs only there).
 *
 * Rules decided here: `maxSteps` counts the run's attempts, ignoring `interrupted`
 * ones (a `running` attempt at decide time counts as interrupted); an interrupted `pure` node
 * runs again, and so does an external node that declares a managed `effect` (with an
 * `EffectPort` in `executeNode` its reservation adopts a stored receipt); any other interrupted
 * `external` node blocks the run unless `facts.approvedRetry` names that attempt (an operator
 * reviewed it and resumed); failures route only through
 * `$result.*` switches; `cancelled` never routes; a missing switch case fails the run with
 * `routingError`; a node with no out-edge completes the run with its output; a `waiting`
 * attempt is the run's end for this worker (the host records the answer as that attempt's `ok`
 * output, after checking it against what the node declared, and a new worker routes on).
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { NodeEffect, RunFacts } from "../protocol/run-facts.ts";
import { presentationProblem, type WaitingPresentation } from "../protocol/waiting-presentation.ts";
import type { CompiledNode, CompiledWorkflow } from "./compile.ts";
import { type FactsView, invocationStart, viewFacts } from "./facts-view.ts";
import { presentationContext, renderPresentation } from "./presentation-context.ts";
import { routeFrom } from "./routing.ts";

export type { CompiledNode, CompiledWorkflow } from "./compile.ts";
export { compileWorkflow } from "./compile.ts";
export { acceptAgentSubmission, executeNode, prepareAgentStep } from "./execute-node.ts";
export type { ExecuteContext } from "./execute-node.ts";
export type { NodeResult } from "./node-result.ts";
export type { EffectPort, EffectReservation } from "./managed-effect.ts";
export type { OutputSink, ProcessGroupHooks } from "./shell-runner.ts";
export { trackAppendOnlyFacts } from "./facts-view.ts";
export { DEFAULT_NODE_TIMEOUT_MS, resolveNodeTimeout } from "./node-timeout.ts";

export type NextStep =
  | {
    kind: "startNode";
    nodeId: string;
    nodeKind: string;
    effect: NodeEffect;
    /** 1-based visit of this node, counting committed attempts. */
    visit: number;
    statusDetail: string | null;
  }
  | { kind: "complete"; output: JsonValue; presentationPrompt: string | null }
  | {
    kind: "fail";
    outcome: "failed" | "timed_out" | "cancelled";
    error: { code: string; message: string };
  }
  /** The last attempt is a checkpoint or human decision with no answer yet. */
  | { kind: "wait"; nodeId: string; attemptId: string }
  /** An external node was interrupted: repeating it could repeat its side effect. */
  | {
    kind: "blocked";
    nodeId: string;
    attemptId: string;
    error: { code: string; message: string };
  };

export function decideNext(wf: CompiledWorkflow, facts: RunFacts): NextStep {
  const view = viewFacts(wf, facts);
  const last = view.last;
  if (!last) return start(wf, view, wf.startAt);
  const node = wf.nodes.get(last.nodeId);
  if (!node) {
    return fail(
      "failed",
      "unknownNode",
      `Run facts name node "${last.nodeId}", which the workflow does not have`,
    );
  }
  if (last.state === "running" || last.state === "interrupted") {
    // A managed effect is safe to repeat: its reservation adopts a stored receipt.
    if (
      last.effect === "pure" || node.managedEffect !== null ||
      facts.approvedRetry?.attemptId === last.attemptId
    ) {
      return start(wf, view, last.nodeId);
    }
    return {
      kind: "blocked",
      nodeId: last.nodeId,
      attemptId: last.attemptId,
      error: {
        code: "effectAmbiguous",
        message:
          `Node "${last.nodeId}" (${node.kind}) was interrupted and may have applied its effect: record what happened with 'pi-workflows effect resolve' or cancel the run`,
      },
    };
  }
  const record = view.record(view.steps.at(-1)!);
  if (record.outcome === "waiting") {
    return { kind: "wait", nodeId: last.nodeId, attemptId: last.attemptId };
  }
  const route = routeFrom(wf, last.nodeId, record);
  if (route.kind === "error") return fail("failed", route.code, route.message);
  if (route.kind === "next") return start(wf, view, route.nodeId);
  if (record.outcome === "ok") return complete(wf, view, facts, record.output ?? null);
  const outcome = record.outcome === "timed_out"
    ? "timed_out"
    : record.outcome === "cancelled"
    ? "cancelled"
    : "failed";
  return {
    kind: "fail",
    outcome,
    error: record.error ??
      { code: defaultCode(outcome), message: `Node "${last.nodeId}" ended ${outcome}` },
  };
}

function defaultCode(outcome: string): string {
  return outcome === "timed_out"
    ? "nodeTimedOut"
    : outcome === "cancelled"
    ? "nodeCancelled"
    : "nodeFailed";
}

function fail(
  outcome: "failed" | "timed_out" | "cancelled",
  code: string,
  message: string,
): NextStep {
  return { kind: "fail", outcome, error: { code, message } };
}

function start(wf: CompiledWorkflow, view: ReturnType<typeof viewFacts>, nodeId: string): NextStep {
  const node = wf.nodes.get(nodeId)!;
  if (view.steps.length >= wf.maxSteps) {
    return fail(
      "failed",
      "maxStepsExceeded",
      `Workflow "${wf.name}" used all ${wf.maxSteps} steps before reaching "${nodeId}": raise maxSteps or bound the loop`,
    );
  }
  const inner = scopeBudgetExceeded(node, view);
  if (inner) return inner;
  return {
    kind: "startNode",
    nodeId,
    nodeKind: node.kind,
    effect: node.effect,
    visit: (view.visits.get(nodeId) ?? 0) + 1,
    statusDetail: node.node.statusDetail ?? null,
  };
}

/** An included workflow's `maxSteps` applies per invocation (see `invocationStart`). */
function scopeBudgetExceeded(
  node: CompiledNode,
  view: ReturnType<typeof viewFacts>,
): NextStep | null {
  for (let scope = node.scope; scope.parent; scope = scope.parent) {
    const used = view.steps.length - invocationStart(view, scope);
    if (used >= scope.maxSteps) {
      return fail(
        "failed",
        "maxStepsExceeded",
        `Included workflow "${scope.definition.name}" (mount "${
          scope.prefix.slice(0, -1)
        }") used all ${scope.maxSteps} steps`,
      );
    }
  }
  return null;
}

function complete(
  wf: CompiledWorkflow,
  view: FactsView,
  facts: RunFacts,
  output: JsonValue,
): NextStep {
  const rendered = renderPresentation(wf, () => presentationContext(wf, view, facts, output));
  if ("problem" in rendered) return fail("failed", "presentationFailed", rendered.problem);
  return { kind: "complete", output, presentationPrompt: rendered.prompt };
}

/**
 * The presentation of an interactive run that now waits at checkpoint `nodeId` with `request`
 * (0.12 presented a waiting run too): the root's `presentationPrompt` with `state.status`
 * `"waiting"`. A problem does not fail the run: it waits anyway, and the turn says what failed.
 */
export function waitingPresentation(
  wf: CompiledWorkflow,
  facts: RunFacts,
  nodeId: string,
  request: JsonValue,
): WaitingPresentation | null {
  const rendered = renderPresentation(
    wf,
    () => presentationContext(wf, viewFacts(wf, facts), facts, request, nodeId),
  );
  if ("problem" in rendered) return presentationProblem(rendered.problem);
  return rendered.prompt === null ? null : { prompt: rendered.prompt };
}

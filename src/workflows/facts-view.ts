/**
 * Reads a run's committed facts the way node callbacks and routing see them: which attempts
 * count, the latest result and ok output per node, answered checkpoints, and the per-scope view
 * (local node ids, `outputs[mount] = {exit, output}`) inside included workflows.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { AttemptFact, RunFacts } from "../protocol/run-facts.ts";
import type { CompiledScope, CompiledWorkflow } from "./compile.ts";
import { validateHumanResponse } from "./human-decision.ts";
import { toJson } from "./json-value.ts";
import { NodeFailure } from "./errors.ts";
import type { NodeResultRecord } from "./types.ts";

export interface FactsView {
  /** Attempts that count: not `interrupted`, not `running` (treated as interrupted). */
  steps: { attempt: AttemptFact; record: NodeResultRecord }[];
  latest: Map<string, NodeResultRecord>;
  outputs: Map<string, JsonValue>;
  /** Effective attempts per node id. */
  visits: Map<string, number>;
}

export function viewFacts(wf: CompiledWorkflow, facts: RunFacts): FactsView {
  const sorted = [...facts.attempts].sort((a, b) => a.sequence - b.sequence);
  const answer = facts.resumeAnswer;
  const lastWaitingForAnswer = answer
    ? sorted.findLast((a) => a.nodeId === answer.nodeId && a.state === "waiting")
    : undefined;
  const view: FactsView = { steps: [], latest: new Map(), outputs: new Map(), visits: new Map() };
  for (const attempt of sorted) {
    if (attempt.state === "interrupted" || attempt.state === "running") continue;
    let record = recordOf(attempt);
    const given = attempt === lastWaitingForAnswer ? answer!.answer : attempt.answer;
    if (attempt.state === "waiting" && given !== undefined) {
      record = answeredRecord(wf, attempt, given);
    }
    view.steps.push({ attempt, record });
    view.latest.set(attempt.nodeId, record);
    view.visits.set(attempt.nodeId, (view.visits.get(attempt.nodeId) ?? 0) + 1);
    // A later failure hides the node's earlier output, so callbacks never read stale data.
    if (record.outcome === "ok") view.outputs.set(attempt.nodeId, record.output ?? null);
    else view.outputs.delete(attempt.nodeId);
  }
  return view;
}

function recordOf(a: AttemptFact): NodeResultRecord {
  const record: NodeResultRecord = {
    outcome: a.state as NodeResultRecord["outcome"],
    durationMs: a.finishedAt !== undefined ? Math.max(0, a.finishedAt - a.startedAt) : null,
    attemptId: a.attemptId,
  };
  if (a.output !== undefined) record.output = a.output;
  if (a.error !== undefined) record.error = a.error;
  return record;
}

function answeredRecord(
  wf: CompiledWorkflow,
  a: AttemptFact,
  answer: JsonValue,
): NodeResultRecord {
  const base = { durationMs: recordOf(a).durationMs, attemptId: a.attemptId };
  const node = wf.nodes.get(a.nodeId)?.node;
  if (node?.kind === "humanDecision") {
    const checked = validateHumanResponse(node.choices, answer);
    if (!checked.ok) {
      return {
        ...base,
        outcome: "failed",
        error: { code: "invalidAnswer", message: `Invalid decision answer: ${checked.message}` },
      };
    }
    return { ...base, outcome: "ok", output: checked.response as unknown as JsonValue };
  }
  return { ...base, outcome: "ok", output: answer };
}

export interface ScopeContext {
  input: unknown;
  outputs: Record<string, JsonValue>;
  results: Record<string, NodeResultRecord>;
}

/** Context as seen from inside `scope`: local ids, mounts as `{exit, output}`, scope input. */
export function scopeContext(
  wf: CompiledWorkflow,
  view: FactsView,
  facts: RunFacts,
  scope: CompiledScope,
): ScopeContext {
  const outputs: Record<string, JsonValue> = {};
  const results: Record<string, NodeResultRecord> = {};
  for (const [id, record] of view.latest) {
    if (!id.startsWith(scope.prefix)) continue;
    const local = id.slice(scope.prefix.length);
    if (local.includes("/")) continue;
    results[local] = record;
    if (view.outputs.has(id)) outputs[local] = view.outputs.get(id)!;
  }
  for (const [mount, child] of scope.children) {
    let best: { exit: string; record: NodeResultRecord; seq: number } | null = null;
    for (const [exit, nodeId] of child.exits) {
      const step = view.steps.findLast((s) => s.attempt.nodeId === nodeId);
      if (step && (!best || step.attempt.sequence > best.seq)) {
        best = { exit, record: step.record, seq: step.attempt.sequence };
      }
    }
    if (best && best.record.outcome === "ok") {
      const value = { exit: best.exit, output: best.record.output ?? null };
      outputs[mount] = value;
      results[mount] = { ...best.record, output: value };
    }
  }
  return { input: scopeInput(wf, view, facts, scope), outputs, results };
}

function scopeInput(
  wf: CompiledWorkflow,
  view: FactsView,
  facts: RunFacts,
  scope: CompiledScope,
): unknown {
  if (!scope.parent || !scope.include) return facts.input;
  const parent = scopeContext(wf, view, facts, scope.parent);
  const spec = scope.include.input;
  let raw: unknown;
  try {
    raw = typeof spec === "function"
      ? spec({
        input: parent.input,
        outputs: parent.outputs,
        results: parent.results,
        state: {
          runId: facts.runId,
          workflowName: wf.name,
          nodeId: scope.prefix.slice(0, -1),
          attemptId: "",
          visit: 0,
          stepsUsed: view.steps.length,
          maxSteps: wf.maxSteps,
        },
      })
      : spec;
    const parse = scope.definition.input;
    return toJson(parse ? parse(raw ?? null) : (raw ?? null), "included workflow input");
  } catch (error) {
    if (error instanceof NodeFailure) throw error;
    throw new NodeFailure(
      "includeInputFailed",
      `Input for included workflow "${scope.definition.name}" (mount "${scope.mount}") failed: ${
        error instanceof Error ? error.message : String(error)
      }`,
    );
  }
}

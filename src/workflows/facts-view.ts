/**
 * Reads a run's committed facts the way node callbacks and routing see them: which attempts
 * count, the latest result and ok output per node, and the per-scope view
 * (local node ids, `outputs[mount] = {exit, output}`) inside included workflows.
 *
 * The worker asks for a view at every step of a run, so building one is a single pass with no
 * per-attempt objects; result records and the context's `outputs`/`results` are made lazily.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { AttemptFact, RunFacts } from "../protocol/run-facts.ts";
import type { CompiledScope, CompiledWorkflow } from "./compile.ts";
import { toJson } from "./json-value.ts";
import { NodeFailure } from "./errors.ts";
import { readonlyRecord } from "./readonly-record.ts";
import { answerAsRead } from "./human-decision.ts";
import { resultError } from "./result-error.ts";
import type { NodeResultRecord, NodeType012 } from "./types.ts";

/** The run's project path; a worker runs in it, so the current directory stands in for it. */
export function projectPathOf(facts: RunFacts): string {
  return facts.projectPath ?? process.cwd();
}

export interface FactsView {
  /** Attempts that count, in order: not `interrupted`, not `running` (treated as interrupted). */
  steps: AttemptFact[];
  /** Latest counted attempt per node id. */
  latest: Map<string, AttemptFact>;
  /** Latest ok output per node id; a later failure removes it. */
  outputs: Map<string, JsonValue>;
  visits: Map<string, number>;
  /** The attempt with the highest sequence, whatever its state. */
  last: AttemptFact | undefined;
  /** The result record of a counted attempt (`nodeId`: the id its scope knows it by). */
  record(attempt: AttemptFact, nodeId?: string): NodeResultRecord;
}

/**
 * Facts objects the owner promised to change only by appending new attempts in sequence order
 * (never editing or removing one): the worker's own copy of its run's facts. For them the last
 * view is kept and extended by the new attempts, so a run of n steps costs O(n), not O(n²).
 */
const appendOnly = new WeakMap<RunFacts, BuiltView | null>();

interface BuiltView {
  wf: CompiledWorkflow;
  attempts: readonly AttemptFact[];
  /** How many of `attempts` the view has taken in, and the last of them. */
  count: number;
  tail: AttemptFact | undefined;
  view: FactsView;
}

/**
 * Marks `facts` as append-only (see above) and returns it. Views of it are then extended in
 * place: a view read before an append reflects the append afterwards.
 */
export function trackAppendOnlyFacts<T extends RunFacts>(facts: T): T {
  appendOnly.set(facts, null);
  return facts;
}

export function viewFacts(wf: CompiledWorkflow, facts: RunFacts): FactsView {
  if (!appendOnly.has(facts)) return buildView(wf, facts).view;
  const built = appendOnly.get(facts);
  if (built && canExtend(built, wf, facts)) {
    takeIn(built, facts.attempts, built.count);
    return built.view;
  }
  const fresh = buildView(wf, facts);
  appendOnly.set(facts, fresh);
  return fresh.view;
}

function canExtend(built: BuiltView, wf: CompiledWorkflow, facts: RunFacts): boolean {
  const attempts = facts.attempts;
  if (built.wf !== wf || built.attempts !== attempts) return false;
  if (attempts.length < built.count || attempts[built.count - 1] !== built.tail) return false;
  let previous = built.tail;
  for (let i = built.count; i < attempts.length; i++) {
    if (previous && previous.sequence > attempts[i].sequence) return false;
    previous = attempts[i];
  }
  return true;
}

function buildView(wf: CompiledWorkflow, facts: RunFacts): BuiltView {
  const attempts = isSorted(facts.attempts)
    ? facts.attempts
    : [...facts.attempts].sort((a, b) => a.sequence - b.sequence);
  const view: FactsView = {
    steps: [],
    latest: new Map(),
    outputs: new Map(),
    visits: new Map(),
    last: undefined,
    record: (attempt, nodeId) => recordOf(attempt, nodeId, outputOf(wf, attempt)),
  };
  const built: BuiltView = {
    wf,
    attempts: facts.attempts,
    count: 0,
    tail: undefined,
    view,
  };
  takeIn(built, attempts, 0);
  return built;
}

/** Adds `attempts[from..]` (in sequence order) to the view. */
function takeIn(
  built: BuiltView,
  attempts: readonly AttemptFact[],
  from: number,
): void {
  const { view } = built;
  for (let i = from; i < attempts.length; i++) {
    const attempt = attempts[i];
    view.last = attempt;
    if (attempt.state === "interrupted" || attempt.state === "running") continue;
    view.steps.push(attempt);
    view.latest.set(attempt.nodeId, attempt);
    view.visits.set(attempt.nodeId, (view.visits.get(attempt.nodeId) ?? 0) + 1);
    // A later failure hides the node's earlier output, so callbacks never read stale data.
    if (attempt.state === "ok") {
      view.outputs.set(attempt.nodeId, outputOf(built.wf, attempt) ?? null);
    } else view.outputs.delete(attempt.nodeId);
  }
  built.count = attempts.length;
  built.tail = attempts.at(-1);
}

function isSorted(attempts: readonly AttemptFact[]): boolean {
  for (let i = 1; i < attempts.length; i++) {
    if (attempts[i - 1].sequence > attempts[i].sequence) return false;
  }
  return true;
}

/** An attempt's output as callbacks read it (a human decision's answer with 0.12's `input`). */
function outputOf(wf: CompiledWorkflow, a: AttemptFact): JsonValue | undefined {
  if (a.nodeKind !== "humanDecision" || a.output === undefined) return a.output;
  const node = wf.nodes.get(a.nodeId)?.node;
  return node?.kind === "humanDecision" ? answerAsRead(node.choices, a.output) : a.output;
}

function recordOf(
  a: AttemptFact,
  nodeId = a.nodeId,
  output = a.output,
): NodeResultRecord {
  const record: NodeResultRecord = {
    outcome: a.state as NodeResultRecord["outcome"],
    durationMs: a.finishedAt !== undefined ? Math.max(0, a.finishedAt - a.startedAt) : null,
    attemptId: a.attemptId,
    nodeId,
    nodeType: nodeType012(a.nodeKind),
    startedAt: new Date(a.startedAt).toISOString(),
  };
  if (a.finishedAt !== undefined) record.finishedAt = new Date(a.finishedAt).toISOString();
  if (output !== undefined) record.output = output;
  if (a.error !== undefined) record.error = resultError(a.error);
  return record;
}

/** 0.12's five node types; this version's kinds map onto the one they grew from. */
function nodeType012(kind: string): NodeType012 {
  switch (kind) {
    case "compute":
    case "notify":
    case "checkpoint":
    case "action":
      return kind;
    case "shell":
      return "action";
    case "humanDecision":
      return "checkpoint";
    default:
      return "agent";
  }
}

/**
 * Where the current invocation of an included scope began, as an index into `view.steps`: the
 * trailing attempts inside the scope, back to the last time the scope was left through one of
 * its exits (an exit node is terminal in its workflow, so its attempt always ends an
 * invocation). Re-entering a mount starts a fresh invocation: its local outputs and results are
 * empty again and its own `maxSteps` starts over.
 */
export function invocationStart(view: FactsView, scope: CompiledScope): number {
  let i = view.steps.length;
  if (!scope.parent) return 0;
  const exits = new Set(scope.exits.values());
  while (i > 0) {
    const nodeId = view.steps[i - 1].nodeId;
    if (!nodeId.startsWith(scope.prefix) || exits.has(nodeId)) break;
    i--;
  }
  return i;
}

/** The latest attempt and ok output per node, over one scope invocation's attempts. */
function invocationMaps(
  wf: CompiledWorkflow,
  view: FactsView,
  scope: CompiledScope,
): { latest: Map<string, AttemptFact>; outputs: Map<string, JsonValue> } {
  if (!scope.parent) return view;
  const latest = new Map<string, AttemptFact>();
  const outputs = new Map<string, JsonValue>();
  for (let i = invocationStart(view, scope); i < view.steps.length; i++) {
    const attempt = view.steps[i];
    latest.set(attempt.nodeId, attempt);
    if (attempt.state === "ok") outputs.set(attempt.nodeId, outputOf(wf, attempt) ?? null);
    else outputs.delete(attempt.nodeId);
  }
  return { latest, outputs };
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
  // Inside an include only the current invocation is visible.
  const seen = invocationMaps(wf, view, scope);
  const mountExit = (mount: string) => {
    const child = scope.children.get(mount);
    if (!child) return undefined;
    let best: { exit: string; attempt: AttemptFact } | undefined;
    for (const [exit, nodeId] of child.exits) {
      const attempt = seen.latest.get(nodeId);
      if (attempt && (!best || attempt.sequence > best.attempt.sequence)) best = { exit, attempt };
    }
    if (!best || !seen.outputs.has(best.attempt.nodeId)) return undefined;
    return {
      exit: best.exit,
      output: seen.outputs.get(best.attempt.nodeId)!,
      attempt: best.attempt,
    };
  };
  const keys = (withOutput: boolean) => {
    const out: string[] = [];
    for (const id of seen.latest.keys()) {
      if (!id.startsWith(scope.prefix)) continue;
      const local = id.slice(scope.prefix.length);
      if (local.includes("/") || (withOutput && !seen.outputs.has(id))) continue;
      out.push(local);
    }
    for (const mount of scope.children.keys()) if (mountExit(mount)) out.push(mount);
    return out;
  };
  const local = (key: string) => (key.includes("/") ? undefined : scope.prefix + key);
  const outputs = readonlyRecord<JsonValue>("outputs", () => keys(true), (key) => {
    const id = local(key);
    if (id !== undefined && seen.outputs.has(id)) return seen.outputs.get(id);
    const exited = mountExit(key);
    return exited ? { exit: exited.exit, output: exited.output } : undefined;
  });
  const results = readonlyRecord<NodeResultRecord>("results", () => keys(false), (key) => {
    const id = local(key);
    const attempt = id !== undefined ? seen.latest.get(id) : undefined;
    if (attempt) return view.record(attempt, key);
    const exited = mountExit(key);
    if (!exited) return undefined;
    return {
      ...view.record(exited.attempt, key),
      output: { exit: exited.exit, output: exited.output },
    };
  });
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
          projectPath: projectPathOf(facts),
          nodeId: scope.prefix.slice(0, -1),
          attemptId: "",
          visit: 0,
          stepsUsed: view.steps.length,
          maxSteps: wf.maxSteps,
          status: "running",
          input: parent.input,
          outputs: parent.outputs,
          results: parent.results,
          currentNode: scope.prefix.slice(0, -1),
          currentAttemptId: "",
        },
      })
      : spec;
    if (raw instanceof Promise) {
      throw new Error("the input function returned a promise: return the value itself");
    }
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

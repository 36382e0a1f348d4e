/**
 * `compileWorkflow` turns a definition into the flattened graph the engine walks: included
 * workflows become nodes named `mount/child`, entry edges point at the child's start node and
 * `mount.exit` edges leave from the child's exit node. Every graph rule is checked here, before
 * a run starts: start node, known targets, at most one out-edge, reachability, include exits,
 * include cycles. The wiring rules report every problem they find in one error, so an author
 * fixes a graph in one pass; only an include that cannot be built stops the check at once.
 */
import type { NodeEffect } from "../protocol/run-facts.ts";
import { isWorkflowDefinition } from "./define-workflow.ts";
import { DEFAULT_MAX_STEPS } from "./definition-schema.ts";
import { WorkflowDefinitionError } from "./errors.ts";
import type { IncludeSpec, NodeKind, WorkflowDefinition, WorkflowNode } from "./types.ts";
import { snapshotNode } from "./snapshot.ts";
import { contractMismatch } from "./include.ts";
import { closestName } from "./sources/closest-name.ts";

/** One workflow instance in the flattened graph: the root or a mounted include. */
export interface CompiledScope {
  /** `""` for the root, `a/` for mount a, `a/b/` for mount b inside a. */
  prefix: string;
  definition: WorkflowDefinition;
  parent: CompiledScope | null;
  /** Mount name in the parent, null for the root. */
  mount: string | null;
  include: IncludeSpec | null;
  /** Exit name -> flattened node id. */
  exits: Map<string, string>;
  /** Mount name -> child scope. */
  children: Map<string, CompiledScope>;
  maxSteps: number;
}

export interface CompiledNode {
  id: string;
  localId: string;
  kind: NodeKind;
  effect: NodeEffect;
  node: WorkflowNode;
  scope: CompiledScope;
  /** Set when this node is an exit of its (included) scope. */
  exitName: string | null;
  /**
   * A declared managed effect (action and shell nodes): an interrupted attempt may run again
   * because reserving the effect adopts a stored receipt instead of applying it twice.
   */
  managedEffect: { type: string; contract: "idempotencyKey" | "readBack" } | null;
}

export type CompiledEdge =
  | { kind: "plain"; to: string }
  | { kind: "switch"; on: string; cases: Record<string, string> };

export interface CompiledWorkflow {
  name: string;
  definition: WorkflowDefinition;
  root: CompiledScope;
  nodes: Map<string, CompiledNode>;
  edges: Map<string, CompiledEdge>;
  startAt: string;
  maxSteps: number;
  /** Canonical JSON-ready snapshot of the flattened graph without functions. */
  snapshot: Record<string, unknown>;
}

export interface CompileOptions {
  /** Resolves a string include (`"./review.workflow.ts"`) to a loaded definition. */
  resolveInclude?: (ref: string, parent: WorkflowDefinition) => WorkflowDefinition;
}

const EFFECTS: Record<NodeKind, NodeEffect> = {
  compute: "pure",
  checkpoint: "pure",
  humanDecision: "pure",
  notify: "pure",
  action: "external",
  shell: "external",
  // A model turn runs again after a crash unless the node opts out (`rerunAfterCrash: false`).
  agent: "pure",
  agentGroup: "pure",
  decision: "pure",
  assistantMessage: "external",
};

export function nodeEffect(kind: NodeKind): NodeEffect {
  return EFFECTS[kind];
}

/** The recovery class of one node: its kind's, or `external` for a model step that opted out. */
export function effectOfNode(node: WorkflowNode): NodeEffect {
  if (
    (node.kind === "agent" || node.kind === "decision" || node.kind === "agentGroup") &&
    node.rerunAfterCrash === false
  ) {
    return "external";
  }
  return EFFECTS[node.kind];
}

function fail(name: string, detail: string, code = "invalidGraph"): never {
  throw new WorkflowDefinitionError(code, `Invalid workflow graph "${name}": ${detail}`);
}

/** The wiring problems found so far, each one actionable sentence. */
type Problems = string[];

/** At most this many problems are spelled out; the rest are counted. */
const MAX_PROBLEMS_SHOWN = 8;

/** One error for every wiring problem found (the message of a single one is unchanged). */
function failAll(name: string, problems: Problems): never {
  if (problems.length === 1) fail(name, problems[0]);
  const shown = problems.slice(0, MAX_PROBLEMS_SHOWN);
  const more = problems.length - shown.length;
  fail(
    name,
    `${problems.length} problems: ${shown.map((p, i) => `(${i + 1}) ${p}`).join("; ")}` +
      (more > 0 ? `; and ${more} more` : ""),
  );
}

/** A problem inside an included workflow names it and its mount. */
function problemIn(scope: CompiledScope, detail: string): string {
  if (!scope.parent) return detail;
  return `in "${scope.definition.name}" (mount "${scope.prefix.slice(0, -1)}"): ${detail}`;
}

/** ` (did you mean "x"?)` when a known node or mount is one typo away. */
function didYouMean(scope: CompiledScope, typed: string): string {
  const near = closestName(typed, [
    ...Object.keys(scope.definition.nodes),
    ...scope.children.keys(),
  ]);
  return near ? `; did you mean "${near}"?` : "";
}

export function compileWorkflow(
  def: WorkflowDefinition,
  options: CompileOptions = {},
): CompiledWorkflow {
  if (!isWorkflowDefinition(def)) {
    throw new WorkflowDefinitionError(
      "invalidDefinition",
      "Invalid workflow definition: expected the result of defineWorkflow",
    );
  }
  const nodes = new Map<string, CompiledNode>();
  const edges = new Map<string, CompiledEdge>();
  const root = buildScope(def, null, null, null, "", [def], options, nodes);
  const problems: Problems = [];
  wireScope(root, nodes, edges, problems);
  const startAt = entryOf(root, root.definition.startAt, problems, null);
  if (startAt !== null) checkReachable(startAt, nodes, edges, problems);
  if (problems.length > 0 || startAt === null) failAll(def.name, problems);
  const snapshot = {
    schema: "pi-workflows.definition-snapshot.v1",
    name: def.name,
    ...(def.contractId !== undefined ? { contractId: def.contractId } : {}),
    startAt,
    maxSteps: root.maxSteps,
    hasPresentationPrompt: def.presentationPrompt !== undefined,
    // The declared schedule is plain data; `schedule apply` reads it from here.
    ...(def.schedule !== undefined ? { schedule: def.schedule } : {}),
    ...(def.budget !== undefined ? { budget: { ...def.budget } } : {}),
    nodes: Object.fromEntries(
      [...nodes.values()].map((n) => [n.id, { ...snapshotNode(n.node), effect: n.effect }]),
    ),
    edges: Object.fromEntries([...edges.entries()].sort(([a], [b]) => (a < b ? -1 : 1))),
    scopes: scopeSnapshot(root),
  };
  return {
    name: def.name,
    definition: def,
    root,
    nodes,
    edges,
    startAt,
    maxSteps: root.maxSteps,
    snapshot,
  };
}

function buildScope(
  def: WorkflowDefinition,
  parent: CompiledScope | null,
  mount: string | null,
  include: IncludeSpec | null,
  prefix: string,
  chain: WorkflowDefinition[],
  options: CompileOptions,
  nodes: Map<string, CompiledNode>,
): CompiledScope {
  const scope: CompiledScope = {
    prefix,
    definition: def,
    parent,
    mount,
    include,
    exits: new Map(),
    children: new Map(),
    maxSteps: def.maxSteps ?? DEFAULT_MAX_STEPS,
  };
  for (const [localId, node] of Object.entries(def.nodes)) {
    nodes.set(prefix + localId, {
      id: prefix + localId,
      localId,
      kind: node.kind,
      effect: effectOfNode(node),
      node,
      scope,
      exitName: null,
      managedEffect: (node.kind === "action" || node.kind === "shell") && node.effect
        ? {
          type: node.effect.type ?? node.kind,
          contract: node.effect.observe ? "readBack" : "idempotencyKey",
        }
        : null,
    });
  }
  for (const [name, spec] of Object.entries(def.includes ?? {})) {
    let child = spec.workflow;
    if (typeof child === "string") {
      if (!options.resolveInclude) {
        fail(def.name, `include "${name}" names "${child}", which only the loader can resolve`);
      }
      child = options.resolveInclude(child, def);
    }
    if (!isWorkflowDefinition(child)) {
      fail(def.name, `include "${name}" is not a workflow definition`, "invalidDefinition");
    }
    const mismatch = contractMismatch(spec, child);
    if (mismatch) {
      fail(
        def.name,
        `include "${name}" (workflow "${child.name}") does not match its contract: ${mismatch}`,
        "contractMismatch",
      );
    }
    if (chain.includes(child) || chain.some((d) => d.name === child.name)) {
      const path = [...chain.map((d) => d.name), child.name].join(" -> ");
      fail(def.name, `include cycle: ${path}`, "sourceCycle");
    }
    if (!child.exits || Object.keys(child.exits).length === 0) {
      fail(def.name, `included workflow "${child.name}" (mount "${name}") declares no exits`);
    }
    const sub = buildScope(
      child,
      scope,
      name,
      spec,
      `${prefix}${name}/`,
      [...chain, child],
      options,
      nodes,
    );
    scope.children.set(name, sub);
  }
  return scope;
}

/**
 * The flattened node a target name enters: a node, or the start of a mounted include; null
 * (and a problem) when it names neither. `from` is the edge's source, null for a start node.
 */
function entryOf(
  scope: CompiledScope,
  target: string,
  problems: Problems,
  from: string | null,
): string | null {
  if (target in scope.definition.nodes) return scope.prefix + target;
  const child = scope.children.get(target);
  if (child) {
    // A child's missing start node is reported when the child is wired.
    return child.definition.startAt in child.definition.nodes ||
        child.children.has(child.definition.startAt)
      ? entryOf(child, child.definition.startAt, problems, null)
      : null;
  }
  const detail = from === null
    ? `start node "${target}" does not exist`
    : `edge from "${from}" goes to unknown target "${target}"`;
  problems.push(problemIn(scope, detail + didYouMean(scope, target)));
  return null;
}

/** The flattened node an edge source names: a node, or `mount.exit`; null and a problem if not. */
function sourceOf(scope: CompiledScope, from: string, problems: Problems): string | null {
  if (from in scope.definition.nodes) return scope.prefix + from;
  const dot = from.indexOf(".");
  const problem = (detail: string) => {
    problems.push(problemIn(scope, detail));
    return null;
  };
  if (dot < 0) {
    if (scope.children.has(from)) {
      return problem(`edges leave include "${from}" through "${from}.<exit>", not "${from}"`);
    }
    return problem(`edge from unknown node "${from}"${didYouMean(scope, from)}`);
  }
  const mount = from.slice(0, dot);
  const child = scope.children.get(mount);
  if (!child) return problem(`edge from unknown include "${mount}"${didYouMean(scope, mount)}`);
  const exit = child.exits.get(from.slice(dot + 1));
  if (!exit) {
    const known = [...child.exits.keys()].map((e) => `"${e}"`).join(", ");
    return problem(
      `include "${mount}" has no exit "${from.slice(dot + 1)}" (its exits: ${known || "none"})`,
    );
  }
  return exit;
}

function wireScope(
  scope: CompiledScope,
  nodes: Map<string, CompiledNode>,
  edges: Map<string, CompiledEdge>,
  problems: Problems,
): void {
  const def = scope.definition;
  if (scope.parent && !(def.startAt in def.nodes) && !scope.children.has(def.startAt)) {
    entryOf(scope, def.startAt, problems, null); // The root's start is checked by the caller.
  }
  // Children first: a parent's `mount.exit` edge needs the child's exit map.
  for (const child of scope.children.values()) wireScope(child, nodes, edges, problems);
  if (scope.parent) {
    for (const [exitName, exit] of Object.entries(def.exits ?? {})) {
      const from = sourceOf(scope, exit.from, problems);
      if (from === null) continue;
      const node = nodes.get(from)!;
      if (node.scope === scope) node.exitName = exitName;
      scope.exits.set(exitName, from);
    }
  }
  // Sources with an edge, even one whose target was a problem (it is not a terminal node).
  const outgoing = new Set<string>();
  for (const edge of def.edges ?? []) {
    const from = sourceOf(scope, edge.from, problems);
    if (from === null) continue;
    if (outgoing.has(from)) {
      problems.push(
        problemIn(
          scope,
          `node "${edge.from}" has more than one outgoing edge (route with one switch edge)`,
        ),
      );
      continue;
    }
    outgoing.add(from);
    if ("to" in edge) {
      const to = entryOf(scope, edge.to, problems, edge.from);
      if (to !== null) edges.set(from, { kind: "plain", to });
    } else {
      const cases: Record<string, string> = {};
      for (const [value, target] of Object.entries(edge.switch.cases)) {
        const to = entryOf(scope, target, problems, edge.from);
        if (to !== null) cases[value] = to;
      }
      edges.set(from, { kind: "switch", on: edge.switch.on, cases });
    }
  }
  if (scope.parent) {
    const exitNodes = new Set(scope.exits.values());
    for (const exitNode of exitNodes) {
      if (edges.has(exitNode) || outgoing.has(exitNode)) {
        problems.push(
          problemIn(scope, `exit node "${exitNode.slice(scope.prefix.length)}" must be terminal`),
        );
      }
    }
    for (const localId of Object.keys(def.nodes)) {
      const id = scope.prefix + localId;
      if (!outgoing.has(id) && !exitNodes.has(id)) {
        problems.push(problemIn(
          scope,
          `terminal node "${localId}" is not an exit; an included workflow ends only through exits`,
        ));
      }
    }
  }
}

function checkReachable(
  startAt: string,
  nodes: Map<string, CompiledNode>,
  edges: Map<string, CompiledEdge>,
  problems: Problems,
): void {
  const seen = new Set([startAt]);
  const queue = [startAt];
  while (queue.length > 0) {
    const edge = edges.get(queue.shift()!);
    if (!edge) continue;
    const targets = edge.kind === "plain" ? [edge.to] : Object.values(edge.cases);
    for (const t of targets) {
      if (!seen.has(t)) {
        seen.add(t);
        queue.push(t);
      }
    }
  }
  const unreachable = [...nodes.keys()].filter((id) => !seen.has(id));
  if (unreachable.length > 0) {
    problems.push(
      `unreachable node${unreachable.length > 1 ? "s" : ""} ${unreachable.join(", ")} ` +
        "(no edge from the start node leads there)",
    );
  }
}

function scopeSnapshot(scope: CompiledScope): Record<string, unknown> {
  return {
    name: scope.definition.name,
    ...(scope.definition.contractId !== undefined
      ? { contractId: scope.definition.contractId }
      : {}),
    prefix: scope.prefix,
    maxSteps: scope.maxSteps,
    exits: Object.fromEntries(scope.exits),
    includes: Object.fromEntries(
      [...scope.children.entries()].map(([m, c]) => [m, scopeSnapshot(c)]),
    ),
  };
}

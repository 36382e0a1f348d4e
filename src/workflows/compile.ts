/**
 * `compileWorkflow` turns a definition into the flattened graph the engine walks: included
 * workflows become nodes named `mount/child`, entry edges point at the child's start node and
 * `mount.exit` edges leave from the child's exit node. Every graph rule is checked here, before
 * a run starts: start node, known targets, at most one out-edge, reachability, include exits,
 * include cycles. The wiring rules (graph-wiring.ts) report every problem they find in one
 * error, so an author fixes a graph in one pass; only an include that cannot be built stops the
 * check at once.
 */
import type { NodeEffect } from "../protocol/run-facts.ts";
import {
  DEFINITION_SNAPSHOT_SCHEMA,
  type DefinitionSnapshot,
} from "../protocol/definition-snapshot.ts";
import type {
  CompiledEdge,
  CompiledNode,
  CompiledScope,
  CompiledWorkflow,
  CompileOptions,
} from "./compiled-graph.ts";
import { isWorkflowDefinition } from "./define-workflow.ts";
import { DEFAULT_MAX_STEPS } from "./definition-schema.ts";
import { WorkflowDefinitionError } from "./errors.ts";
import {
  checkReachable,
  entryOf,
  fail,
  failAll,
  type Problems,
  wireScope,
} from "./graph-wiring.ts";
import type { IncludeSpec, NodeKind, WorkflowDefinition, WorkflowNode } from "./types.ts";
import { snapshotNode } from "./snapshot.ts";
import { contractMismatch } from "./include.ts";

export type {
  CompiledEdge,
  CompiledNode,
  CompiledScope,
  CompiledWorkflow,
  CompileOptions,
} from "./compiled-graph.ts";

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
  const snapshot: DefinitionSnapshot = {
    schema: DEFINITION_SNAPSHOT_SCHEMA,
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

/**
 * The shapes of a compiled workflow (compile.ts builds them, graph-wiring.ts checks and wires
 * them, the engine walks them): scopes, flattened nodes and edges.
 */
import type { NodeEffect } from "../protocol/run-facts.ts";
import type { DefinitionSnapshot } from "../protocol/definition-snapshot.ts";
import type { IncludeSpec, NodeKind, WorkflowDefinition, WorkflowNode } from "./types.ts";

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
  snapshot: DefinitionSnapshot;
}

export interface CompileOptions {
  /** Resolves a string include (`"./review.workflow.ts"`) to a loaded definition. */
  resolveInclude?: (ref: string, parent: WorkflowDefinition) => WorkflowDefinition;
}

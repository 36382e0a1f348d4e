/**
 * Composition: mount another workflow under a name and leave it through its named exits.
 *
 * `includeWorkflow(child, {input})` takes a definition (usually imported) or a reference string
 * (`"./review.workflow.ts"`, a workflow name, `builtin:<id>`). The object form
 * `includeWorkflow({workflow, input, contract})` is the same, plus `contract`: a definition the
 * resolved child must match (same `contractId` when the contract has one, the same exit names,
 * and an input parser exactly when the contract has one), so a reference that a project or user
 * file may override still has the shape the parent was written against.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { isWorkflowDefinition } from "./define-workflow.ts";
import { WorkflowDefinitionError } from "./errors.ts";
import type { IncludeSpec, NodeContext, WorkflowDefinition } from "./types.ts";

type IncludeInput = JsonValue | ((ctx: Omit<NodeContext, "signal">) => unknown);

export interface IncludeOptions {
  input?: IncludeInput;
}

export interface IncludeDeclaration extends IncludeOptions {
  workflow: WorkflowDefinition | string;
  contract?: WorkflowDefinition;
}

export function includeWorkflow(
  workflow: WorkflowDefinition | string | IncludeDeclaration,
  options: IncludeOptions = {},
): IncludeSpec {
  const declared: IncludeDeclaration = typeof workflow === "string" ||
      isWorkflowDefinition(workflow)
    ? { workflow, ...options }
    : workflow;
  const bad = (detail: string): never => {
    throw new WorkflowDefinitionError("invalidDefinition", `Invalid includeWorkflow: ${detail}`);
  };
  if (typeof declared !== "object" || declared === null) {
    bad("expected a definition, a reference string or {workflow, input?, contract?}");
  }
  const target = declared.workflow;
  if (
    !(typeof target === "string" && target.length > 0) && !isWorkflowDefinition(target)
  ) {
    bad("workflow must be a definition from defineWorkflow or a reference string");
  }
  // 0.12 awaited an async input function; here the parent's edge resolves it synchronously.
  if (
    typeof declared.input === "function" && declared.input.constructor?.name === "AsyncFunction"
  ) {
    bad("an async input function is not supported: return the child's input itself");
  }
  if (declared.contract !== undefined && !isWorkflowDefinition(declared.contract)) {
    bad("contract must be a definition from defineWorkflow");
  }
  return {
    __piwInclude: true,
    workflow: target,
    input: declared.input,
    ...(declared.contract ? { contract: declared.contract } : {}),
  };
}

/** Why `child` does not fit the include's contract, or null when it does (or there is none). */
export function contractMismatch(spec: IncludeSpec, child: WorkflowDefinition): string | null {
  const contract = spec.contract;
  if (!contract) return null;
  if (contract.contractId !== undefined && child.contractId !== contract.contractId) {
    return `expected contractId "${contract.contractId}", got ${
      child.contractId === undefined ? "none" : `"${child.contractId}"`
    }`;
  }
  const names = (d: WorkflowDefinition) => Object.keys(d.exits ?? {}).sort().join(", ");
  if (names(contract) !== names(child)) {
    return `expected exits ${names(contract) || "none"}, got ${names(child) || "none"}`;
  }
  if ((contract.input === undefined) !== (child.input === undefined)) {
    return contract.input === undefined
      ? "the contract takes its input as is, but the workflow declares an input parser"
      : "the contract declares an input parser, but the workflow has none";
  }
  return null;
}

/** The value `outputs[mount]` holds after the run left the mount through an exit. */
export interface IncludedResult<E extends string = string, O = JsonValue> {
  exit: E;
  output: O;
}

/**
 * Narrows `outputs[mount]`; throws a clear error when the mount has not exited yet or (for a
 * definition) names an exit the child does not declare.
 */
export function includedResult<E extends string = string, O = JsonValue>(
  child: WorkflowDefinition | string,
  value: unknown,
): IncludedResult<E, O> {
  const name = typeof child === "string" ? child : child?.name;
  if (
    typeof value !== "object" || value === null || !("exit" in value) || !("output" in value) ||
    typeof (value as { exit: unknown }).exit !== "string"
  ) {
    throw new TypeError(
      `Included workflow${name ? ` ${name}` : ""} result is missing: the mount has not exited yet`,
    );
  }
  const exit = (value as { exit: string }).exit;
  if (typeof child !== "string" && child?.exits && !Object.hasOwn(child.exits, exit)) {
    throw new TypeError(`Included workflow ${name} has no exit "${exit}"`);
  }
  return value as IncludedResult<E, O>;
}

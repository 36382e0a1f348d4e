/** Composition: mount another workflow under a name and leave it through its named exits. */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { IncludeSpec, NodeContext, WorkflowDefinition } from "./types.ts";

export function includeWorkflow(
  workflow: WorkflowDefinition | string,
  options: { input?: JsonValue | ((ctx: Omit<NodeContext, "signal">) => unknown) } = {},
): IncludeSpec {
  return { __piwInclude: true, workflow, input: options.input };
}

/** The value `outputs[mount]` holds after the run left the mount through an exit. */
export interface IncludedResult<E extends string = string, O = JsonValue> {
  exit: E;
  output: O;
}

/** Narrows `outputs[mount]`; throws a clear error when the mount has not exited yet. */
export function includedResult<E extends string = string, O = JsonValue>(
  _child: WorkflowDefinition | string,
  value: unknown,
): IncludedResult<E, O> {
  if (
    typeof value !== "object" || value === null || !("exit" in value) || !("output" in value) ||
    typeof (value as { exit: unknown }).exit !== "string"
  ) {
    throw new TypeError("Included workflow result is missing: the mount has not exited yet");
  }
  return value as IncludedResult<E, O>;
}

/** Input normalization, title and interactive-need checks done once at run start. */
import { fingerprint, type JsonValue } from "../../protocol/canonical-json.ts";
import type { CompiledWorkflow } from "../compile.ts";
import { errorMessage, WorkflowDefinitionError } from "../errors.ts";
import { toJson } from "../json-value.ts";

/**
 * Runs the workflow's `input` parser on the raw input (`undefined` becomes `null`). The result
 * must be JSON. Throws `WorkflowDefinitionError` with code `invalidInput` and the parser's message.
 */
export function normalizeWorkflowInput(
  wf: CompiledWorkflow,
  raw: unknown,
): { input: JsonValue; inputHash: string } {
  const value = raw === undefined ? null : raw;
  let parsed: unknown;
  try {
    parsed = wf.definition.input ? wf.definition.input(value) : value;
  } catch (error) {
    throw new WorkflowDefinitionError(
      "invalidInput",
      `Invalid input for workflow "${wf.name}": ${errorMessage(error, 1000)}`,
    );
  }
  if (parsed instanceof Promise) {
    throw new WorkflowDefinitionError(
      "invalidInput",
      `Invalid input parser of workflow "${wf.name}": it must return a value, not a promise`,
    );
  }
  let input: JsonValue;
  try {
    input = toJson(parsed, "normalized input");
  } catch (error) {
    throw new WorkflowDefinitionError(
      "invalidInput",
      `Invalid input for workflow "${wf.name}": ${errorMessage(error)}`,
    );
  }
  return { input, inputHash: fingerprint(input) };
}

/** The run title: the definition's title (string or function of the input), else null. */
export function resolveWorkflowTitle(wf: CompiledWorkflow, input: JsonValue): string | null {
  const spec = wf.definition.title;
  if (spec === undefined) return null;
  try {
    const title = typeof spec === "function" ? spec({ input, workflowName: wf.name }) : spec;
    return typeof title === "string" ? title.slice(0, 200) : null;
  } catch {
    return null;
  }
}

/** True when a step can only run in an origin Pi session (assistant messages). */
export function workflowNeedsOriginSession(wf: CompiledWorkflow): boolean {
  return [...wf.nodes.values()].some((n) => n.kind === "assistantMessage");
}

/** True when any step talks to a model (agent, decision or assistant message). */
export function workflowHasAgentSteps(wf: CompiledWorkflow): boolean {
  return [...wf.nodes.values()].some((n) =>
    n.kind === "agent" || n.kind === "decision" || n.kind === "assistantMessage"
  );
}

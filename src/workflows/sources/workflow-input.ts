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

/**
 * How long a `title` callback may take. It runs in the source resolver at start, whose own
 * deadline (15 s by default) also covers loading the workflow.
 */
export const TITLE_TIMEOUT_MS = 10_000;

/**
 * The run title: the definition's title (a string, or a function of `{input, workflowName}`
 * that may be async), one line of at most 200 characters; null without one. A callback that throws, hangs
 * past TITLE_TIMEOUT_MS or returns something other than a string (or undefined) refuses the
 * start with `titleFailed`.
 */
export async function resolveWorkflowTitle(
  wf: CompiledWorkflow,
  input: JsonValue,
  timeoutMs = TITLE_TIMEOUT_MS,
): Promise<string | null> {
  const spec = wf.definition.title;
  if (spec === undefined) return null;
  if (typeof spec === "string") return oneLineTitle(spec);
  const refuse = (detail: string) =>
    new WorkflowDefinitionError(
      "titleFailed",
      `The title callback of workflow "${wf.name}" ${detail}`,
    );
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(refuse(`did not answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  let title: unknown;
  try {
    title = await Promise.race([
      Promise.resolve().then(() => spec({ input, workflowName: wf.name })),
      expired,
    ]);
  } catch (error) {
    if (error instanceof WorkflowDefinitionError && error.code === "titleFailed") throw error;
    throw refuse(`failed: ${errorMessage(error, 500)}`);
  } finally {
    clearTimeout(timer);
  }
  if (title === undefined || title === null) return null;
  if (typeof title !== "string") throw refuse(`returned ${typeof title}, not a string`);
  return oneLineTitle(title);
}

// deno-lint-ignore no-control-regex -- line breaks and other control characters
const TITLE_BREAKS = /[\x00-\x1f\x7f-\x9f\u2028\u2029]+/g;

/**
 * A title is one line wherever it is shown (lists, status heads, Pi's widget): line breaks and
 * control characters become one space, and the cut at 200 characters never splits a surrogate
 * pair.
 */
function oneLineTitle(title: string): string {
  const line = title.replace(TITLE_BREAKS, " ").trim();
  if (line.length <= 200) return line;
  const cut = line.slice(0, 200);
  return /[\ud800-\udbff]$/.test(cut) ? cut.slice(0, 199) : cut;
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

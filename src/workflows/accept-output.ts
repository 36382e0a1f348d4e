/**
 * Accepting a model submission for an agent, decision or assistant-message node: normalize
 * the output, then apply the node's rules. Thrown messages go back to the model verbatim, so
 * they say what was wrong and what to send instead.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { normalizeAgentOutput } from "./agent-output.ts";
import type { CompiledNode } from "./compile.ts";
import { errorMessage, NodeFailure } from "./errors.ts";
import { toJson } from "./json-value.ts";
import type { NodeContext } from "./types.ts";

export async function acceptForKind(
  node: CompiledNode,
  ctx: NodeContext,
  raw: unknown,
): Promise<JsonValue> {
  const n = node.node;
  if (n.kind === "assistantMessage") {
    const text = typeof raw === "string"
      ? raw
      : typeof (raw as { text?: unknown })?.text === "string"
      ? (raw as { text: string }).text
      : null;
    if (text === null || text.trim().length === 0) {
      throw new Error('Output rejected: send the message text as a string or {"text": "..."}');
    }
    return { text };
  }
  const output = normalizeAgentOutput(raw);
  if (n.kind === "decision") {
    const picked = typeof output === "object" && output !== null && !Array.isArray(output)
      ? output[n.field]
      : undefined;
    if (typeof picked !== "string" || !n.choices.includes(picked)) {
      throw new Error(
        `Output rejected: "${n.field}" must be one of ${
          n.choices.map((c) => JSON.stringify(c)).join(", ")
        }; send {"${n.field}": "<choice>"}`,
      );
    }
    return output;
  }
  if (n.kind !== "agent") {
    throw new NodeFailure("notAnAgentStep", `Node "${node.id}" does not take model submissions`);
  }
  if (!n.validate) return output;
  let replaced: unknown;
  try {
    replaced = await n.validate(output, ctx);
  } catch (error) {
    throw new Error(`Output rejected: ${errorMessage(error)}`);
  }
  return replaced === undefined ? output : toJson(replaced, "validated output");
}

/** The instruction appended to a decision question. */
export function decisionSuffix(choices: readonly string[], field: string): string {
  return `\n\nChoose exactly one of: ${
    choices.join(", ")
  }. Answer with a JSON object {"${field}": "<choice>"}.`;
}

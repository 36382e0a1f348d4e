/**
 * What the extension reads from Pi's `message_start`/`message_end` events (`{message}`, shapes
 * Pi owns: read defensively, anything unexpected reads as "no").
 */

/** The name the `workflow` tool is registered under (workflow-tool.ts). */
export const WORKFLOW_TOOL_NAME = "workflow";

function messageOf(event: unknown): Record<string, unknown> | null {
  const message = (event as { message?: unknown } | null)?.message;
  return message !== null && typeof message === "object"
    ? message as Record<string, unknown>
    : null;
}

export function isAssistantMessage(event: unknown): boolean {
  return messageOf(event)?.role === "assistant";
}

/** The message calls the workflow tool's `submit` (Pi runs that call right after its end). */
export function callsWorkflowSubmit(event: unknown): boolean {
  const content = messageOf(event)?.content;
  return Array.isArray(content) && content.some((part) => {
    const call = part as { type?: unknown; name?: unknown; arguments?: { action?: unknown } };
    return call?.type === "toolCall" && call.name === WORKFLOW_TOOL_NAME &&
      call.arguments?.action === "submit";
  });
}

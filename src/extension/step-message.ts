/**
 * The session message the presenter sends for a step: its first showing, a reminder, or the
 * nudge to continue it (`resume`). The details name the run, request and presentation so a later
 * Pi process finds the entry on the branch (session-messages.ts).
 */
import { resumeText } from "./presenter-text.ts";
import type { ClaimedInteraction } from "./session-ops.ts";
import { MESSAGE_DETAILS_SCHEMA, MESSAGE_TYPE, type MessageDetails } from "./session-messages.ts";

export interface Outgoing {
  kind: "step" | "reminder" | "resume";
  options: { display: boolean; presentationId?: string; text?: string; reminder?: number };
}

/** The custom message for `pi.sendMessage`. */
export function stepMessage(
  interaction: ClaimedInteraction,
  { kind, options }: Outgoing,
): { customType: string; content: string; display: boolean; details: MessageDetails } {
  const details: MessageDetails = {
    schema: MESSAGE_DETAILS_SCHEMA,
    kind,
    runId: interaction.runId,
    interactionId: interaction.interactionId,
    step: interaction.contract.step,
    attempt: interaction.contract.attempt,
    ...(options.presentationId ? { presentationId: options.presentationId } : {}),
    ...(options.reminder ? { reminder: options.reminder } : {}),
  };
  const content = options.text ??
    (kind === "step" ? interaction.contract.message : resumeText(interaction));
  return { customType: MESSAGE_TYPE, content, display: options.display, details };
}

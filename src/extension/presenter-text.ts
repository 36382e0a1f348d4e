/**
 * What the presenter (presenter.ts) says besides the step's own message: the text that shows a
 * waiting step again, and the person's notices about a step on hold, closed or failed.
 */
import type { ClaimedInteraction } from "./session-ops.ts";
import { contractBlockOf } from "./session-messages.ts";

/** The message that shows a step again (`/workflow resume`, or a step adopted from a dead Pi). */
export function resumeText(interaction: ClaimedInteraction): string {
  const rejected = interaction.submission?.status === "rejected"
    ? `\nThe last submission was rejected: ${interaction.submission.error?.message ?? "no reason"}`
    : "";
  return `Workflow step ${JSON.stringify(interaction.contract.step)} shown earlier is still ` +
    `waiting for its submission. Continue it now.${rejected}\n\n---\n` +
    contractBlockOf(interaction.contract.message);
}

/** The host closed the step without an accepted submission. */
export function closedElsewhereNotice(step: string): string {
  return `Workflow step ${step} is no longer pending`;
}

/** Escape aborted the turn working on the step. */
export function heldNotice(step: string): string {
  return `Workflow step ${step} is on hold; /workflow resume continues it`;
}

/** The model failed (after Pi's retries): the step waits instead of spending its reminders. */
export function modelFailedNotice(step: string, modelError: string): string {
  return `Workflow step ${step} is on hold: the model failed (${modelError}); ` +
    "/workflow resume continues it";
}

/** The host failed the attempt after its reminders; its own message when it gave one. */
export function noSubmissionNotice(step: string, hostMessage: string | undefined): string {
  return hostMessage ?? `Workflow step ${step} failed: no submission`;
}

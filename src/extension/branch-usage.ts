/**
 * What an interactive step has used so far: the usage Pi recorded on every assistant message of
 * the session's current branch after the step's first presentation (its step message). Pi
 * appends each message to the session before it runs the message's tool calls, so a submission
 * counts the model call that made it; reminders, rejected submissions and the turns of a Pi that
 * restarted in between all lie on the branch, and each message is counted once. The host sets the
 * attempt's usage to this sum with the submission, an update or a reminder.
 */
import type { StepUsage } from "../protocol/step-usage.ts";
import type { BranchIndex } from "./branch-index.ts";

/** The step's usage so far; undefined when its step message is not on the branch or none used. */
export function stepUsageOnBranch(
  branch: BranchIndex,
  interactionId: string,
): StepUsage | undefined {
  const shown = branch.ours().find((entry) =>
    entry.details.kind === "step" && entry.details.interactionId === interactionId
  );
  return shown === undefined ? undefined : branch.usageAfter(shown);
}

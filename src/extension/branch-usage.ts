/**
 * What an interactive step has used so far: the usage Pi recorded on every assistant message of
 * the session's current branch after the step's first presentation (its step message). Pi
 * appends each message to the session before it runs the message's tool calls, so a submission
 * counts the model call that made it; reminders, rejected submissions and the turns of a Pi that
 * restarted in between all lie on the branch, and each message is counted once. The host sets the
 * attempt's usage to this sum with the submission, an update or a reminder.
 */
import { addUsage, EMPTY_USAGE, type StepUsage, usageOfPiMessage } from "../protocol/step-usage.ts";
import type { PiSessionManager } from "./pi-api.ts";
import { isOurEntry } from "./session-messages.ts";

/** The step's usage so far; undefined when its step message is not on the branch or none used. */
export function stepUsageOnBranch(
  session: PiSessionManager,
  interactionId: string,
): StepUsage | undefined {
  const branch = session.getBranch();
  const shown = branch.findIndex((entry) =>
    isOurEntry(entry) && entry.details.kind === "step" &&
    entry.details.interactionId === interactionId
  );
  if (shown === -1) return undefined;
  let total: StepUsage | undefined;
  for (let i = shown + 1; i < branch.length; i++) {
    if (branch[i].type !== "message") continue;
    const usage = usageOfPiMessage(branch[i].message);
    if (usage !== null) total = addUsage(total ?? EMPTY_USAGE, usage);
  }
  return total;
}

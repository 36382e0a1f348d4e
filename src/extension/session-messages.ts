/**
 * The custom messages this extension puts in a Pi session and how it finds them again in the
 * session branch. Every message carries `details` naming what it shows (`kind` plus the
 * interaction, decision or run id), so after a Pi restart or `/reload` the extension can tell
 * which step is already on screen (exact session-entry adoption) without any state of its own.
 */
import type { PiSessionEntry, PiSessionManager } from "./pi-api.ts";

/** The one custom message type; `details.kind` says which message it is. */
export const MESSAGE_TYPE = "pi-workflows";
export const MESSAGE_DETAILS_SCHEMA = "pi-workflows.session-message.v1";

export type MessageKind =
  /** A step's presentation (the node prompt and its contract): visible, starts a turn. */
  | "step"
  /** The step again after the agent settled without submitting. */
  | "reminder"
  /** A hidden nudge to continue an already visible step after Pi restarted. */
  | "resume"
  /** A protected human decision or a checkpoint, shown to the person without a model turn. */
  | "decision"
  /** A deferred `start` from the tool that could not start: the model should react. */
  | "launchFailed";

export interface MessageDetails {
  schema: typeof MESSAGE_DETAILS_SCHEMA;
  kind: MessageKind;
  runId: string;
  interactionId?: string;
  /** Tells one presentation of an interaction from another (a fresh one per send). */
  presentationId?: string;
  decisionId?: string;
  step?: string;
  attempt?: string;
  reminder?: number;
}

/** A message of this extension as a session entry. */
export type OurEntry = PiSessionEntry & { details: MessageDetails };

export function isOurEntry(entry: PiSessionEntry): entry is OurEntry {
  const details = entry.details as Partial<MessageDetails> | undefined;
  return entry.type === "custom_message" && entry.customType === MESSAGE_TYPE &&
    details?.schema === MESSAGE_DETAILS_SCHEMA;
}

/** This extension's messages on the current branch, oldest first. */
export function ourEntries(session: PiSessionManager): OurEntry[] {
  return session.getBranch().filter(isOurEntry);
}

export function branchHasEntry(session: PiSessionManager, entryId: string): boolean {
  return session.getBranch().some((entry) => entry.id === entryId);
}

/**
 * The latest step presentation of `interactionId` among this extension's messages on the branch
 * (`BranchIndex.ours`; a presentation id narrows it).
 */
export function findStepEntry(
  ours: readonly OurEntry[],
  interactionId: string,
  presentationId?: string,
): OurEntry | undefined {
  return ours.findLast((entry) =>
    entry.details.kind === "step" && entry.details.interactionId === interactionId &&
    (presentationId === undefined || entry.details.presentationId === presentationId)
  );
}

/** The run named by this extension's latest message on the branch (null if none names one). */
export function latestBranchRunId(session: PiSessionManager): string | null {
  const entry = ourEntries(session).findLast((e) => e.details.runId !== "");
  return entry?.details.runId ?? null;
}

export function hasDecisionEntry(session: PiSessionManager, decisionId: string): boolean {
  return ourEntries(session).some((entry) =>
    entry.details.kind === "decision" && entry.details.decisionId === decisionId
  );
}

/**
 * The contract block of a step message: everything after the node prompt's `---` separator, so
 * a reminder or resume nudge can repeat the exact tool arguments without repeating the prompt.
 */
export function contractBlockOf(message: string): string {
  const at = message.lastIndexOf("\n---\n");
  return at === -1 ? message : message.slice(at + "\n---\n".length);
}

/**
 * The session messages of the outbox: notifications of notify nodes and the turns the host owes
 * this session (completion presentations, successor turns). Each carries `details` naming the
 * notification or turn intent it shows, so after a Pi restart the extension finds an item it
 * already showed on its branch and records that entry instead of showing the item again.
 */
import type { ClaimedNotification } from "../protocol/outbox-operations.ts";
import type { PiSessionEntry, PiSessionManager } from "./pi-api.ts";

/** The custom message type of outbox messages (the step messages have their own). */
export const OUTBOX_MESSAGE_TYPE = "pi-workflows-outbox";
export const OUTBOX_DETAILS_SCHEMA = "pi-workflows.outbox-message.v1";

export type OutboxDetails =
  & { schema: typeof OUTBOX_DETAILS_SCHEMA; runId: string }
  & (
    | { kind: "notification"; notificationId: string; notificationKind: "progress" | "final" }
    | { kind: "turn"; turnIntentId: string; turnKind: "presentation" | "fallback" }
  );

/** What a person reads for a notification; a `final` one reads as the workflow's closing word. */
export function notificationText(n: ClaimedNotification): string {
  return n.kind === "final"
    ? `Workflow ${n.workflowName} — final:\n${n.message}`
    : `Workflow ${n.workflowName}: ${n.message}`;
}

function detailsOf(entry: PiSessionEntry): OutboxDetails | null {
  if (entry.type !== "custom_message" || entry.customType !== OUTBOX_MESSAGE_TYPE) return null;
  const details = entry.details as Partial<OutboxDetails> | undefined;
  return details?.schema === OUTBOX_DETAILS_SCHEMA ? details as OutboxDetails : null;
}

/** The entry on the branch that shows this notification or turn intent, if any. */
export function findOutboxEntry(
  session: PiSessionManager,
  item: { notificationId: string } | { turnIntentId: string },
): PiSessionEntry | undefined {
  return session.getBranch().find((entry) => {
    const details = detailsOf(entry);
    if (details === null) return false;
    return "notificationId" in item
      ? details.kind === "notification" && details.notificationId === item.notificationId
      : details.kind === "turn" && details.turnIntentId === item.turnIntentId;
  });
}

/**
 * When the person last wrote in this session: the timestamp of the latest user message on the
 * branch (Pi's `message` entries carry the message with its role and epoch-ms timestamp). A
 * completion presentation that became due before it is stale.
 */
export function lastUserTurnAt(session: PiSessionManager): number | undefined {
  const branch = session.getBranch();
  for (let i = branch.length - 1; i >= 0; i--) {
    if (branch[i].type !== "message") continue;
    const message = (branch[i] as { message?: { role?: unknown; timestamp?: unknown } }).message;
    if (message?.role === "user" && typeof message.timestamp === "number") {
      return Math.floor(message.timestamp);
    }
  }
  return undefined;
}

/** A run's notifications for `status` (a headless run's only place to read them). */
import type { RunNotification } from "../protocol/outbox-operations.ts";

const MAX_MESSAGE_CHARS = 2000;

export function formatNotifications(notifications: readonly RunNotification[]): string {
  const lines = ["notifications:"];
  for (const n of notifications) {
    const when = new Date(n.createdAt).toISOString();
    const shown = n.state === "delivered" ? "shown in Pi" : "not shown in Pi";
    const text = n.message.length > MAX_MESSAGE_CHARS
      ? `${n.message.slice(0, MAX_MESSAGE_CHARS - 1)}…`
      : n.message;
    lines.push(`  ${n.kind === "final" ? "■" : "•"} ${n.nodeId} ${when} (${n.kind}, ${shown})`);
    for (const line of text.split("\n")) lines.push(`    ${line}`);
  }
  return lines.join("\n");
}

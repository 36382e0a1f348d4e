/**
 * What an interrupted headless attempt used, read back from the run's Pi session. A headless
 * step's outcome carries the usage of the model call that submitted it in the outcome's own
 * commit (pi-usage.ts), so a worker killed after that call but before the commit takes the
 * call's usage with it. Pi appended every assistant message, with its usage, to the run's
 * session file before it ran the message's tool calls, so the next worker, before it goes on
 * (and before its budget check), sums the interrupted attempt's messages there and records the
 * sum on that attempt (`worker.progress {op: "usage.recovered"}`) when it is more than the
 * attempt recorded: nothing is lost, and what was recorded (a part of the sum) is not counted
 * twice. A crash that kept nothing from SQLite adds no commit here.
 *
 * The attempt's messages are those after the first prompt that names it (`Attempt: <id>`, the
 * step contract's line; its reminders name it too) and before a prompt that names another one.
 * Agent group members run in sessions of their own and are not read back here.
 */
import { readFileSync } from "node:fs";
import type { RunFacts } from "../protocol/run-facts.ts";
import { addUsage, EMPTY_USAGE, type StepUsage, usageOfPiMessage } from "../protocol/step-usage.ts";
import { usageTokens } from "../protocol/step-usage.ts";
import type { Proposer } from "./proposer.ts";

/** Node kinds whose headless attempts are prompts of the run's session. */
const SESSION_KINDS: ReadonlySet<string> = new Set(["agent", "decision"]);

/**
 * Records what the run's last attempt used when it was an interrupted model step of the run's
 * session and the session holds more than it recorded; `facts` takes the recorded usage.
 */
export async function recoverInterruptedUsage(
  sessionFile: string,
  facts: RunFacts,
  proposer: Proposer,
): Promise<void> {
  const index = facts.attempts.length - 1;
  const last = facts.attempts[index];
  if (last?.state !== "interrupted" || !SESSION_KINDS.has(last.nodeKind)) return;
  let text: string;
  try {
    text = readFileSync(sessionFile, "utf8");
  } catch {
    return; // no session: Pi never answered
  }
  const usage = attemptUsageInSession(text, last.attemptId);
  if (usage === null || usageTokens(usage) <= (last.usage ? usageTokens(last.usage) : 0)) return;
  await proposer.propose("worker.progress", {
    op: "usage.recovered",
    attemptId: last.attemptId,
    usage,
  });
  facts.attempts[index] = { ...last, usage };
}

/** The usage of attempt `attemptId`'s assistant messages on the session's branch, or null. */
export function attemptUsageInSession(sessionText: string, attemptId: string): StepUsage | null {
  let total: StepUsage | null = null;
  let inside = false;
  for (const message of branchMessages(sessionText)) {
    if (message.role === "user") {
      const named = attemptNamed(message, attemptId);
      if (named === attemptId) inside = true;
      else if (named !== null && inside) break;
      continue;
    }
    if (!inside) continue;
    const usage = usageOfPiMessage(message);
    if (usage !== null) total = addUsage(total ?? EMPTY_USAGE, usage);
  }
  return total;
}

interface SessionEntry {
  type?: unknown;
  id?: unknown;
  parentId?: unknown;
  message?: { role?: unknown; content?: unknown };
}

/**
 * The messages of the session's current branch (from its last entry back to the root by
 * `parentId`), oldest first. A line that is not JSON (a torn last write) is skipped.
 */
function branchMessages(text: string): { role?: unknown; content?: unknown }[] {
  const byId = new Map<unknown, SessionEntry>();
  let leaf: SessionEntry | undefined;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let entry: SessionEntry;
    try {
      entry = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof entry !== "object" || entry === null || entry.type === "session") continue;
    byId.set(entry.id, entry);
    leaf = entry;
  }
  const branch: { role?: unknown; content?: unknown }[] = [];
  const seen = new Set<SessionEntry>();
  for (
    let entry = leaf;
    entry !== undefined && !seen.has(entry);
    entry = byId.get(entry.parentId)
  ) {
    seen.add(entry);
    if (entry.type === "message" && typeof entry.message === "object" && entry.message !== null) {
      branch.push(entry.message);
    }
  }
  return branch.reverse();
}

/**
 * The attempt a workflow prompt names on its contract's `Attempt:` line (`attemptId` when it is
 * one of them), or null.
 */
function attemptNamed(message: { content?: unknown }, attemptId: string): string | null {
  const content = message.content;
  const text = typeof content === "string"
    ? content
    : Array.isArray(content)
    ? content.map((part) => (part?.type === "text" ? String(part.text ?? "") : "")).join("\n")
    : "";
  const named = [...text.matchAll(/^Attempt: (\S+)$/gm)].map((match) => match[1]);
  return named.length === 0 ? null : named.includes(attemptId) ? attemptId : named[0];
}

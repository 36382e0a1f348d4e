/**
 * What an interrupted headless attempt used, read back from the run's Pi session. A headless
 * step's outcome carries the usage of the model call that submitted it in the outcome's own
 * commit (pi-usage.ts), so a worker killed after that call but before the commit takes the
 * call's usage with it. Pi appended every assistant message, with its usage, to the run's
 * session file before it ran the message's tool calls, so the next worker, before it goes on
 * (and before its budget check), sums the interrupted attempt's messages there and records the
 * sum on that attempt (`worker.progress {op: "usage.recovered"}`) when it is more than the
 * attempt recorded: nothing is lost, and what was recorded (a part of the sum) is not counted
 * twice. A crash that kept nothing from SQLite adds no commit here. The same goes for the
 * attempt's submissions: an accepted one is counted on the outcome, so the crash took its count
 * too; the session holds the model's submitting calls (`workflow` with action `submit` naming
 * the attempt), and their number raises the attempt's `submitted` (never lowers it).
 *
 * The attempt's messages are those after the first prompt that names it (`Attempt: <id>`, the
 * step contract's line; its reminders name it too) and before a prompt that names another one.
 *
 * An agent group's members run in sessions of their own (headless-session.ts), headless Pi
 * children in either execution mode, each prompted as attempt `<group attempt>.<member>`: each
 * member's usage is the larger of what the attempt recorded for it and what its session holds,
 * and the group's is their sum, so no member's is lowered or counted twice.
 */
import { readFileSync } from "node:fs";
import type { AttemptFact, RunFacts } from "../protocol/run-facts.ts";
import {
  addUsage,
  EMPTY_USAGE,
  type MemberUsage,
  type StepUsage,
  sumMembers,
  usageOfPiMessage,
  usageTokens,
} from "../protocol/step-usage.ts";
import { memberSessionFiles } from "../base/pi-session-files.ts";
import type { Proposer } from "./proposer.ts";
import { attemptLines } from "../workflows/step-contract.ts";

/** Node kinds whose headless attempts are prompts of the run's session. */
const SESSION_KINDS: ReadonlySet<string> = new Set(["agent", "decision"]);

/** Where a run's Pi conversations are (headless-session.ts). */
export interface RunSessions {
  /** The run's session file: a headless run's agent and decision steps; null for none. */
  runFile: string | null;
  /** The directory of the run's sessions (agent group members' under `members/`). */
  root: string;
}

/**
 * Records what the run's last attempt used and submitted when it was an interrupted model step
 * (of the run's session, or an agent group) and its sessions hold more usage than it recorded,
 * or any submission (the host keeps the larger count); `facts` takes the recorded usage.
 */
export async function recoverInterruptedUsage(
  sessions: RunSessions,
  facts: RunFacts,
  proposer: Proposer,
): Promise<void> {
  const index = facts.attempts.length - 1;
  const last = facts.attempts[index];
  if (last?.state !== "interrupted") return;
  const found = last.nodeKind === "agentGroup"
    ? groupRecord(sessions.root, facts.attempts, last)
    : SESSION_KINDS.has(last.nodeKind) && sessions.runFile !== null
    ? fileRecord(sessions.runFile, last.attemptId)
    : null;
  if (found === null) return;
  const usage = found.usage !== null &&
      usageTokens(found.usage) > (last.usage ? usageTokens(last.usage) : 0)
    ? found.usage
    : null;
  if (usage === null && found.submitted === 0) return;
  await proposer.propose("worker.progress", {
    op: "usage.recovered",
    attemptId: last.attemptId,
    ...(usage === null ? {} : { usage }),
    ...(found.submitted === 0 ? {} : { submitted: found.submitted }),
  });
  if (usage !== null) facts.attempts[index] = { ...last, usage };
}

/** What an attempt's session shows: its model calls' usage and its submitting calls. */
interface SessionRecord {
  usage: StepUsage | null;
  submitted: number;
}

/** Attempt `attemptId`'s record in session file `file`, or null (no such file). */
function fileRecord(file: string, attemptId: string): SessionRecord | null {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return null;
  }
  return {
    usage: attemptUsageInSession(text, attemptId),
    submitted: attemptSubmissionsInSession(text, attemptId),
  };
}

/**
 * The interrupted group attempt `last`'s usage: every member's, the larger of its recorded and
 * its session's (recorded members first, in their order), and their sum (null when no member
 * session holds any); and the members' submissions, summed.
 */
function groupRecord(
  root: string,
  attempts: readonly AttemptFact[],
  last: AttemptFact,
): SessionRecord | null {
  // The visit the engine gave the attempt: one more than the node's settled attempts.
  const visit = 1 +
    attempts.filter((a) =>
      a.nodeId === last.nodeId && a.state !== "interrupted" && a.state !== "running"
    ).length;
  const recorded = last.usage?.members ?? [];
  const members = new Map<string, MemberUsage>(recorded.map((m) => [m.id, m]));
  let found = false;
  let submitted = 0;
  for (const [id, file] of memberSessionFiles(root, last.nodeId, visit)) {
    const record = fileRecord(file, `${last.attemptId}.${id}`);
    submitted += record?.submitted ?? 0;
    const usage = record?.usage ?? null;
    if (usage === null) continue;
    found = true;
    const before = members.get(id);
    if (before === undefined || usageTokens(usage) > usageTokens(before)) {
      members.set(id, { id, ...usage });
    }
  }
  return { usage: found ? sumMembers([...members.values()]) : null, submitted };
}

/** The usage of attempt `attemptId`'s assistant messages on the session's branch, or null. */
export function attemptUsageInSession(sessionText: string, attemptId: string): StepUsage | null {
  let total: StepUsage | null = null;
  for (const message of attemptMessages(sessionText, attemptId)) {
    const usage = usageOfPiMessage(message);
    if (usage !== null) total = addUsage(total ?? EMPTY_USAGE, usage);
  }
  return total;
}

/**
 * How many submissions the model made in attempt `attemptId`: its `workflow` tool calls with
 * action `submit` naming that attempt (the worker counts those and no others).
 */
export function attemptSubmissionsInSession(sessionText: string, attemptId: string): number {
  let count = 0;
  for (const message of attemptMessages(sessionText, attemptId)) {
    if (message.role !== "assistant" || !Array.isArray(message.content)) continue;
    for (const part of message.content) {
      const args = part?.arguments as { action?: unknown; attempt?: unknown } | undefined;
      if (
        part?.type === "toolCall" && part.name === "workflow" && args?.action === "submit" &&
        args.attempt === attemptId
      ) count++;
    }
  }
  return count;
}

/** Attempt `attemptId`'s messages (not its prompts) on the session's branch, oldest first. */
function* attemptMessages(
  sessionText: string,
  attemptId: string,
): Generator<{ role?: unknown; content?: unknown }> {
  let inside = false;
  for (const message of branchMessages(sessionText)) {
    if (message.role === "user") {
      const named = attemptNamed(message);
      if (named === attemptId) inside = true;
      else if (named !== null && inside) return;
      continue;
    }
    if (inside) yield message;
  }
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
 * The attempt a workflow prompt names on its contract's `Attempt:` line (the last: the prompt
 * before the contract may hold such a line too), or null.
 */
function attemptNamed(message: { content?: unknown }): string | null {
  const content = message.content;
  const text = typeof content === "string"
    ? content
    : Array.isArray(content)
    ? content.map((part) => (part?.type === "text" ? String(part.text ?? "") : "")).join("\n")
    : "";
  return attemptLines(text).at(-1) ?? null;
}

/**
 * The conversation of a headless agent step as text, from the run's Pi session file (one JSONL
 * file per run, append-only: worker/headless-session.ts): the messages whose time falls in the
 * step's attempt, the prompt, the model's replies and tool calls, and what each tool returned
 * (bounded per entry). A session Pi forked from another (an agent group member's: Pi copies the
 * whole conversation so far, with its timestamps) shows only what came after the fork. The cursor is a byte offset in the file, always at a line's end, so a
 * follower gets each message once, whole. Provider credentials never reach the session file (Pi
 * gets them in its environment); what a tool printed is the user's own output.
 */
import { Buffer } from "node:buffer";
import { statSync } from "node:fs";
import { readFileRange } from "../base/step-output-files.ts";
import { attemptLines } from "../workflows/step-contract.ts";

/** Raw bytes read from the session file in one go: the newest ones for a tail. */
const WINDOW_BYTES = 2 * 1024 * 1024;
/** One tool result or reply shown at most this long. */
const ENTRY_CHARS = 4000;
/** A session's header line is read from at most this many first bytes. */
const HEADER_BYTES = 16 * 1024;

export interface TranscriptChunk {
  text: string;
  /** The byte offset to continue from. */
  next: number;
}

export function readTranscript(
  file: string,
  window: {
    startedAt: number;
    finishedAt: number | null;
    /**
     * The attempt whose conversation this is: a step message or reminder naming another attempt
     * (its contract's `Attempt:` line), and what follows it, is that attempt's, also within the
     * time window's slack (the next step of a run often starts within a second).
     */
    attemptId?: string;
  },
  from: number | null,
  maxBytes: number,
): TranscriptChunk {
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return { text: "", next: from ?? 0 };
  }
  const start = from === null ? Math.max(0, size - WINDOW_BYTES) : Math.min(from, size);
  const bytes = readFileRange(file, start, Math.min(WINDOW_BYTES, size - start));
  // Only whole lines: a message Pi is still writing is read next time.
  let end = bytes.lastIndexOf(0x0a) + 1;
  // One line longer than the window is no message to show: stepped over.
  if (end === 0 && bytes.length >= WINDOW_BYTES) end = bytes.length;
  let lineStart = 0;
  // A tail that starts mid-file starts at the next whole line.
  if (from === null && start > 0) lineStart = bytes.indexOf(0x0a) + 1;
  const shown = { ...window, forkedAt: forkedAt(file) };
  const pieces: { text: string; endOffset: number }[] = [];
  /** The attempt of the latest step message read, once one was. */
  let owner: string | null = null;
  while (lineStart < end) {
    const found = bytes.indexOf(0x0a, lineStart);
    const nl = found === -1 || found >= end ? end : found;
    const entry = parseEntry(bytes.subarray(lineStart, nl).toString("utf8"));
    lineStart = nl + 1;
    if (entry === null) continue;
    owner = stepAttemptOf(entry) ?? owner;
    const id = window.attemptId;
    // A member of an agent group is `<attempt>.<member>`.
    if (id !== undefined && owner !== null && owner !== id && !owner.startsWith(`${id}.`)) {
      continue;
    }
    const text = entryText(entry, shown);
    if (text !== null) pieces.push({ text, endOffset: start + lineStart });
  }
  const next = start + end;
  if (from === null) {
    // A tail: the newest entries that fit.
    const kept: string[] = [];
    let used = 0;
    for (let i = pieces.length - 1; i >= 0; i--) {
      const n = Buffer.byteLength(pieces[i].text) + 1;
      if (used + n > maxBytes && kept.length > 0) break;
      kept.unshift(pieces[i].text);
      used += n;
    }
    return { text: kept.length > 0 ? `${kept.join("\n")}\n` : "", next };
  }
  // Continuing: the oldest entries that fit; the cursor stops after the last one given.
  const given: string[] = [];
  let used = 0;
  let cursor = next;
  for (const piece of pieces) {
    const n = Buffer.byteLength(piece.text) + 1;
    if (used + n > maxBytes && given.length > 0) {
      cursor = pieces[given.length - 1].endOffset;
      break;
    }
    given.push(piece.text);
    used += n;
  }
  return { text: given.length > 0 ? `${given.join("\n")}\n` : "", next: cursor };
}

/**
 * When Pi forked `file` from another session (its header names a `parentSession`): the entries
 * before that time are the other session's. Null for a session of its own.
 */
function forkedAt(file: string): number | null {
  const head = readFileRange(file, 0, HEADER_BYTES);
  const end = head.indexOf(0x0a);
  if (end === -1) return null;
  try {
    const header = JSON.parse(head.subarray(0, end).toString("utf8"));
    if (header?.type !== "session" || typeof header.parentSession !== "string") return null;
    const at = Date.parse(String(header.timestamp));
    return Number.isFinite(at) ? at : null;
  } catch {
    return null;
  }
}

function parseEntry(line: string): Record<string, unknown> | null {
  try {
    const entry = JSON.parse(line);
    return entry !== null && typeof entry === "object" && entry.type === "message" ? entry : null;
  } catch {
    return null;
  }
}

/** The attempt a step message or reminder names: its contract block's `Attempt:` line, the last. */
function stepAttemptOf(entry: Record<string, unknown>): string | null {
  const message = entry.message as Record<string, unknown> | undefined;
  if (!message || message.role !== "user") return null;
  const text = Array.isArray(message.content)
    ? (message.content as Record<string, unknown>[]).map((b) => String(b?.text ?? "")).join("\n")
    : String(message.content ?? "");
  return attemptLines(text).at(-1) ?? null;
}

/** One session message as transcript text; null for what is not a message of this attempt. */
function entryText(
  entry: Record<string, unknown>,
  window: { startedAt: number; finishedAt: number | null; forkedAt: number | null },
): string | null {
  const at = Date.parse(String(entry.timestamp));
  if (!Number.isFinite(at) || at < window.startedAt - 1000) return null;
  if (window.forkedAt !== null && at < window.forkedAt) return null;
  if (window.finishedAt !== null && at > window.finishedAt + 1000) return null;
  const message = entry.message as Record<string, unknown> | undefined;
  if (!message || typeof message !== "object") return null;
  const blocks = Array.isArray(message.content)
    ? message.content as Record<string, unknown>[]
    : [{ type: "text", text: String(message.content ?? "") }];
  const texts = (prefix: string) =>
    blocks.filter((b) => b?.type === "text" && typeof b.text === "string")
      .map((b) => indent(prefix, cut(String(b.text))));
  switch (message.role) {
    case "user":
      return texts("› ").join("\n") || null;
    case "assistant": {
      const out: string[] = [];
      for (const block of blocks) {
        if (block?.type === "text" && typeof block.text === "string" && block.text.trim() !== "") {
          out.push(indent("  ", cut(block.text)));
        } else if (block?.type === "toolCall") {
          out.push(`  ⚙ ${String(block.name)} ${cut(JSON.stringify(block.arguments ?? {}), 300)}`);
        }
      }
      return out.join("\n") || null;
    }
    case "toolResult": {
      const body = texts("").join("\n");
      const mark = message.isError === true ? "✗" : "↳";
      return indent(`    ${mark} `, `${String(message.toolName ?? "tool")}: ${body}`.trimEnd());
    }
    default:
      return null;
  }
}

/** `prefix` before the first line, as many spaces before the others. */
function indent(prefix: string, text: string): string {
  const pad = " ".repeat(prefix.length);
  return text.split("\n").map((line, i) => (i === 0 ? prefix : pad) + line).join("\n");
}

function cut(text: string, max = ENTRY_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}… [${text.length - max} more characters]` : text;
}

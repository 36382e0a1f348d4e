/**
 * Agent output normalization. Models often wrap JSON in prose or a fenced block; a submission
 * string is read tolerantly (strict JSON, then the first fenced block, then the first balanced
 * object or array) and the result must survive a JSON round trip.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { toJson } from "./json-value.ts";

/** Parses a submission. A string with no JSON inside stays a string. */
export function normalizeAgentOutput(raw: unknown): JsonValue {
  if (typeof raw !== "string") return toJson(raw, "agent output");
  const parsed = parseTolerantJson(raw);
  return toJson(parsed.found ? parsed.value : raw, "agent output");
}

export function parseTolerantJson(text: string): { found: true; value: unknown } | {
  found: false;
} {
  const strict = tryParse(text.trim());
  if (strict.found) return strict;
  const fence = /```[A-Za-z0-9_-]*[ \t]*\r?\n([\s\S]*?)```/.exec(text);
  if (fence) {
    const inner = tryParse(fence[1].trim());
    if (inner.found) return inner;
  }
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch !== "{" && ch !== "[") continue;
    const end = balancedEnd(text, i);
    if (end < 0) continue;
    const candidate = tryParse(text.slice(i, end + 1));
    if (candidate.found) return candidate;
  }
  return { found: false };
}

function tryParse(s: string): { found: true; value: unknown } | { found: false } {
  if (s.length === 0) return { found: false };
  try {
    return { found: true, value: JSON.parse(s) };
  } catch {
    return { found: false };
  }
}

/** Index of the bracket closing the one at `start`, honouring strings; -1 if unbalanced. */
function balancedEnd(text: string, start: number): number {
  const stack: string[] = [];
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === "{") stack.push("}");
    else if (ch === "[") stack.push("]");
    else if (ch === "}" || ch === "]") {
      if (stack.pop() !== ch) return -1;
      if (stack.length === 0) return i;
    }
  }
  return -1;
}

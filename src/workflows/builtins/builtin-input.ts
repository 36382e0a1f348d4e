/**
 * Input readers the built-ins share. `/workflow autoplan fix the login` arrives as
 * `{task: "fix the login"}`; `--input-json` may pass an object or a bare string. Each reader
 * throws one line naming the field and what to pass instead.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";

export type InputRecord = Record<string, unknown>;

export function inputRecord(raw: unknown, workflow: string): InputRecord {
  if (typeof raw === "string") return { task: raw };
  if (raw === null || raw === undefined) return {};
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw new Error(`${workflow}: input must be an object (or a task text)`);
  }
  return raw as InputRecord;
}

export function requiredText(input: InputRecord, field: string, workflow: string): string {
  const value = input[field];
  if (typeof value !== "string" || value.trim() === "") {
    throw new Error(
      `${workflow}: "${field}" is required: pass it as text (pi-workflows start ${workflow} <${field}>) or --input-json '{"${field}": "..."}'`,
    );
  }
  return value.trim();
}

export function optionalText(input: InputRecord, field: string, workflow: string): string | null {
  const value = input[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw new Error(`${workflow}: "${field}" must be text`);
  return value.trim() === "" ? null : value.trim();
}

export function boundedInt(
  input: InputRecord,
  field: string,
  workflow: string,
  bounds: { min: number; max: number; fallback: number },
): number {
  const value = input[field];
  if (value === undefined || value === null) return bounds.fallback;
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw new Error(`${workflow}: "${field}" must be a whole number`);
  }
  if (value < bounds.min || value > bounds.max) {
    throw new Error(`${workflow}: "${field}" must be ${bounds.min}-${bounds.max} (got ${value})`);
  }
  return value;
}

export function oneOf<const T extends string>(
  input: InputRecord,
  field: string,
  workflow: string,
  choices: readonly T[],
  fallback: T,
): T {
  const value = input[field];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "string" || !choices.includes(value as T)) {
    throw new Error(`${workflow}: "${field}" must be one of ${choices.join(", ")}`);
  }
  return value as T;
}

/** A plan given as text or JSON, as the later steps read it. */
export function planInput(input: InputRecord, workflow: string): JsonValue | null {
  const plan = input.plan;
  if (plan === undefined || plan === null) return null;
  if (typeof plan === "string" && plan.trim() === "") return null;
  try {
    return JSON.parse(JSON.stringify(plan)) as JsonValue;
  } catch {
    throw new Error(`${workflow}: "plan" must be JSON (text or an object)`);
  }
}

/** Text for a prompt: a string as is, anything else as indented JSON (bounded). */
export function promptText(value: unknown, maxChars = 20_000): string {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2) ?? "null";
  return text.length > maxChars
    ? `${text.slice(0, maxChars)}\n[... cut at ${maxChars} characters]`
    : text;
}

/** Pi tools of a step that reads the project but never changes it. */
export const READ_ONLY_TOOLS = ["read", "grep", "find", "ls"];

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function stringList(value: unknown, what: string, min = 0): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string" || v.trim() === "")) {
    throw new Error(`"${what}" must be a list of non-empty strings`);
  }
  if (value.length < min) throw new Error(`"${what}" needs at least ${min} entries`);
  return value as string[];
}

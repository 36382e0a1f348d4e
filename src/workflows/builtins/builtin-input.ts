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

/** A command the built-in runs in the project: no shell, `args` as given. */
export interface EvidenceCommand {
  id: string;
  command: string;
  args: string[];
}

const COMMAND_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** `[{id?, command, args?}]` or `["npm test", ...]` (split on spaces, no shell). */
export function evidenceCommands(
  value: unknown,
  field: string,
  workflow: string,
): EvidenceCommand[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.length > 16) {
    throw new Error(`${workflow}: "${field}" must be a list of at most 16 commands`);
  }
  return value.map((item, i) => {
    if (typeof item === "string" && item.trim() !== "") {
      const [command, ...args] = item.trim().split(/\s+/);
      return { id: `${field}-${i + 1}`, command, args };
    }
    if (!isRecord(item) || typeof item.command !== "string" || item.command.trim() === "") {
      throw new Error(`${workflow}: ${field}[${i}] needs "command" (and optional "args", "id")`);
    }
    const args = item.args ?? [];
    if (!Array.isArray(args) || args.some((a) => typeof a !== "string")) {
      throw new Error(`${workflow}: ${field}[${i}].args must be a list of strings`);
    }
    const id = typeof item.id === "string" ? item.id : `${field}-${i + 1}`;
    if (!COMMAND_ID.test(id)) {
      throw new Error(`${workflow}: ${field}[${i}].id must match ${COMMAND_ID}`);
    }
    return { id, command: item.command, args: args as string[] };
  });
}

/**
 * The commands under `field` and their timeout under `<field>TimeoutMinutes` (1-60 minutes),
 * e.g. autoimplement's `verify` and sanity-check's `evidence`.
 */
export function commandBatchInput<F extends string>(
  input: InputRecord,
  field: F,
  workflow: string,
  fallbackMinutes: number,
): Record<F, EvidenceCommand[]> & Record<`${F}TimeoutMinutes`, number> {
  const timeoutField = `${field}TimeoutMinutes` as const;
  return {
    [field]: evidenceCommands(input[field], field, workflow),
    [timeoutField]: boundedInt(input, timeoutField, workflow, {
      min: 1,
      max: 60,
      fallback: fallbackMinutes,
    }),
  } as Record<F, EvidenceCommand[]> & Record<`${F}TimeoutMinutes`, number>;
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

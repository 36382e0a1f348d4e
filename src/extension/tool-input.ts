/**
 * The model-facing `workflow` tool's input. Providers want one flat object schema, so the JSON
 * Schema Pi sends is a single object with `additionalProperties: false`, `action` required and
 * every other field optional. The real contract is per action and is checked here with valibot:
 * a call gets the first problems back in one message it can act on.
 */
import * as v from "valibot";
import { type JsonValue, MAX_JSON_DEPTH } from "../protocol/canonical-json.ts";
import { JSON_TOO_DEEP } from "../protocol/json-depth.ts";

export const TOOL_ACTIONS = [
  "list",
  "start",
  "status",
  "pause",
  "resume",
  "cancel",
  "answer",
  "update",
  "submit",
] as const;
export type ToolAction = (typeof TOOL_ACTIONS)[number];

/** The flattened JSON Schema of the tool's parameters (what the model sees). */
export const TOOL_PARAMETERS: Record<string, unknown> = {
  type: "object",
  additionalProperties: false,
  required: ["action"],
  properties: {
    action: {
      type: "string",
      enum: [...TOOL_ACTIONS],
      description: "What to do: list | start | status | pause | resume | cancel | answer | " +
        "update | submit",
    },
    offset: { type: "integer", minimum: 0, description: "list: index of the first workflow" },
    workflow: { type: "string", description: "start: a workflow name or path" },
    input: { description: "start: the workflow input; answer: the checkpoint answer" },
    runId: {
      type: "string",
      description: "status/pause/resume/cancel/answer: the run (default: this session's run)",
    },
    step: { type: "string", description: "update/submit: the step id from the step contract" },
    attempt: {
      type: "string",
      description: "update/submit: the attempt id from the step contract",
    },
    update: {
      type: "object",
      additionalProperties: false,
      required: ["type", "data"],
      properties: {
        type: { type: "string" },
        key: { type: "string" },
        data: {},
      },
      description: "update: a progress update {type, key?, data}",
    },
    output: { description: "submit: the step's output, as the contract's expected output says" },
  },
};

/**
 * A JSON value, as `JsonValueSchema` takes it, checked in one walk and passed on as is: Pi hands
 * the tool the arguments it parsed from the model's JSON, and valibot's union, tried per node and
 * copying every object, cost a submit ~0.1 ms on its way to the host (this code runs a few times
 * a session, mostly unoptimized). Like valibot's record, keys an object must not set
 * (`__proto__`, `constructor`, `prototype`) are left out unchecked, copying only the objects on
 * their path; unlike it, nesting is bounded, so the host can walk what the tool sends.
 */
const JsonArgument = v.pipe(
  // Missing stays a schema issue, which `describe` reports as "required".
  v.custom<unknown>((value) => value !== undefined, "Invalid type: expected a JSON value"),
  v.rawTransform<unknown, JsonValue>(({ dataset, addIssue, NEVER }) => {
    const checked = checkJson(dataset.value, 0);
    if (checked === NOT_JSON) {
      addIssue({
        message:
          "Invalid type: expected a JSON value (null, boolean, finite number, string, array or object)",
      });
      return NEVER;
    }
    if (checked === TOO_DEEP) {
      addIssue({ message: JSON_TOO_DEEP });
      return NEVER;
    }
    return checked;
  }),
);

const NOT_JSON = Symbol("notJson");
const TOO_DEEP = Symbol("tooDeep");
/** The keys valibot's record (so the host's decoding) leaves out of an object. */
const DROPPED_KEYS = new Set(["__proto__", "constructor", "prototype"]);

/** `value` when it is JSON as is, a copy without dropped keys, or why it is not JSON. */
function checkJson(value: unknown, depth: number): JsonValue | typeof NOT_JSON | typeof TOO_DEEP {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? value : NOT_JSON;
    case "object":
      break;
    default:
      return NOT_JSON;
  }
  if (value === null) return null;
  if (depth >= MAX_JSON_DEPTH) return TOO_DEEP;
  if (Array.isArray(value)) {
    let copy: JsonValue[] | undefined;
    for (let i = 0; i < value.length; i++) {
      // A hole reads as undefined, which valibot's array refuses.
      if (!(i in value)) return NOT_JSON;
      const item: unknown = value[i];
      const checked = checkJson(item, depth + 1);
      if (typeof checked === "symbol") return checked;
      if (copy === undefined && checked !== item) copy = value.slice(0, i) as JsonValue[];
      copy?.push(checked);
    }
    return copy ?? (value as JsonValue[]);
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  let copy: Record<string, JsonValue> | undefined;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const item = record[key];
    const dropped = DROPPED_KEYS.has(key);
    const checked = dropped ? undefined : checkJson(item, depth + 1);
    if (typeof checked === "symbol") return checked;
    if (copy === undefined && (dropped || checked !== item)) {
      copy = {};
      for (let j = 0; j < i; j++) {
        if (!DROPPED_KEYS.has(keys[j]!)) copy[keys[j]!] = record[keys[j]!] as JsonValue;
      }
    }
    if (copy !== undefined && checked !== undefined) copy[key] = checked;
  }
  return copy ?? (record as { [key: string]: JsonValue });
}

const Text = v.pipe(v.string(), v.minLength(1), v.maxLength(4096));
const Id = v.pipe(v.string(), v.minLength(1), v.maxLength(200));
const RunId = v.optional(Id);

const UpdateSchema = v.strictObject({
  type: v.pipe(
    v.string(),
    v.regex(/^[a-z][a-z0-9.-]{0,63}$/, "expected a lowercase type like status"),
  ),
  key: v.optional(v.pipe(v.string(), v.maxLength(128))),
  data: JsonArgument,
});

const ACTION_SCHEMAS = {
  list: v.strictObject({
    action: v.literal("list"),
    offset: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0))),
  }),
  start: v.strictObject({
    action: v.literal("start"),
    workflow: Text,
    input: v.optional(JsonArgument),
  }),
  status: v.strictObject({ action: v.literal("status"), runId: RunId }),
  pause: v.strictObject({ action: v.literal("pause"), runId: RunId }),
  resume: v.strictObject({ action: v.literal("resume"), runId: RunId }),
  cancel: v.strictObject({ action: v.literal("cancel"), runId: RunId }),
  answer: v.strictObject({ action: v.literal("answer"), input: JsonArgument, runId: RunId }),
  update: v.strictObject({
    action: v.literal("update"),
    step: Id,
    attempt: Id,
    update: UpdateSchema,
  }),
  submit: v.strictObject({
    action: v.literal("submit"),
    step: Id,
    attempt: Id,
    output: JsonArgument,
  }),
} as const;

export type ToolCall = { [A in ToolAction]: v.InferOutput<(typeof ACTION_SCHEMAS)[A]> }[ToolAction];

const MAX_REPORTED_ISSUES = 3;

export type ParsedToolCall = { ok: true; call: ToolCall } | { ok: false; error: string };

/** Checks a call against its action's contract; the error names at most three problems. */
export function parseToolCall(params: unknown): ParsedToolCall {
  const action = (params as { action?: unknown } | null)?.action;
  if (typeof action !== "string" || !(TOOL_ACTIONS as readonly string[]).includes(action)) {
    return {
      ok: false,
      error: `Invalid workflow tool call: "action" must be one of ${TOOL_ACTIONS.join(", ")}`,
    };
  }
  const result = v.safeParse(ACTION_SCHEMAS[action as ToolAction], params);
  if (result.success) return { ok: true, call: result.output as ToolCall };
  const problems = result.issues.slice(0, MAX_REPORTED_ISSUES).map(describe);
  const more = result.issues.length > MAX_REPORTED_ISSUES
    ? ` (and ${result.issues.length - MAX_REPORTED_ISSUES} more)`
    : "";
  return {
    ok: false,
    error: `Invalid workflow tool call for action "${action}": ${problems.join("; ")}${more}`,
  };
}

function describe(issue: v.BaseIssue<unknown>): string {
  const path = v.getDotPath(issue) ?? "value";
  if (issue.type === "strict_object" && issue.expected === "never") {
    return `${path}: not used by this action`;
  }
  if (issue.input === undefined && issue.kind === "schema") return `${path}: required`;
  return `${path}: ${issue.message}`;
}

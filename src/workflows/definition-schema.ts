/**
 * The valibot shape of a workflow definition, checked eagerly by `defineWorkflow`. Graph rules
 * (start node, targets, one out-edge, reachability) are checked later by `compileWorkflow`.
 */
import { AnswerSchemaSchema } from "../protocol/answer-schema.ts";
import { ScheduleDeclarationSchema } from "../protocol/schedule-operations.ts";
import { BudgetSchema } from "../protocol/budget.ts";
import * as v from "valibot";

export const NODE_ID_PATTERN = /^[A-Za-z_][A-Za-z0-9_-]*$/;
export const RESERVED_NODE_PREFIX = "__piw_";
/** Names that collide with `/workflow` subcommands. */
export const RESERVED_WORKFLOW_NAMES = ["answer", "cancel", "list", "pause", "resume", "status"];
export const WORKFLOW_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const DEFAULT_MAX_STEPS = 100;
export const CONTRACT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

const fn = v.custom<(...args: never[]) => unknown>(
  (x) => typeof x === "function",
  "expected a function",
);
const text = v.union([v.string(), fn], "expected a string or a function");
/**
 * A callback the engine calls synchronously (0.12 awaited it): an `async` function is refused
 * at load, saying what to return instead.
 */
export const syncFn = (instead: string) =>
  v.pipe(
    fn,
    v.check(
      (f) => f.constructor?.name !== "AsyncFunction",
      `an async function is not supported: ${instead}`,
    ),
  );
const timeout = v.optional(
  v.union([
    v.pipe(v.number(), v.integer(), v.minValue(0)),
    v.null(),
    fn,
  ], "expected a non-negative integer, null or a function"),
);
const common = {
  timeoutMs: timeout,
  statusDetail: v.optional(
    v.pipe(
      v.string(),
      v.maxLength(200),
      // deno-lint-ignore no-control-regex -- a label shown on one line of status views
      v.regex(/^[^\x00-\x1f\x7f-\x9f]*$/, "expected one line without control characters"),
    ),
  ),
};
const managedEffect = v.optional(v.strictObject({
  type: v.optional(
    v.pipe(v.string(), v.regex(/^[a-z][a-z0-9.-]{0,63}$/, "expected a lowercase effect type")),
  ),
  key: fn,
  observe: v.optional(fn),
}));
const piTools = v.optional(
  v.pipe(
    v.array(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_*+-]{1,64}$/, "expected a Pi tool name"))),
    v.maxLength(64),
  ),
);
const positiveInt = v.pipe(v.number(), v.integer(), v.minValue(1));

const textInput = v.object({
  name: v.pipe(v.string(), v.minLength(1)),
  prompt: v.string(),
  minLength: v.pipe(v.number(), v.integer(), v.minValue(0)),
  maxLength: positiveInt,
});

const nodeSchema = v.variant("kind", [
  v.object({
    kind: v.literal("agent"),
    prompt: text,
    expectedOutput: v.optional(v.string()),
    validate: v.optional(fn),
    tools: piTools,
    rerunAfterCrash: v.optional(v.boolean()),
    ...common,
  }),
  v.object({
    kind: v.literal("decision"),
    question: text,
    choices: v.pipe(v.array(v.pipe(v.string(), v.minLength(1))), v.minLength(1)),
    field: v.pipe(v.string(), v.minLength(1)),
    rerunAfterCrash: v.optional(v.boolean()),
    ...common,
  }),
  v.object({
    kind: v.literal("agentGroup"),
    agents: fn,
    maxConcurrency: v.optional(v.pipe(positiveInt, v.maxValue(8))),
    tools: piTools,
    minSucceeded: v.optional(v.pipe(positiveInt, v.maxValue(16))),
    rerunAfterCrash: v.optional(v.boolean()),
    ...common,
  }),
  v.object({ kind: v.literal("assistantMessage"), prompt: text, ...common }),
  v.object({ kind: v.literal("compute"), run: fn, ...common }),
  v.object({ kind: v.literal("action"), run: fn, effect: managedEffect, ...common }),
  v.object({
    kind: v.literal("shell"),
    exec: fn,
    parse: v.optional(fn),
    updates: v.optional(v.object({
      streams: v.optional(v.array(v.picklist(["stdout", "stderr"]))),
      parseLine: fn,
    })),
    effect: managedEffect,
    ...common,
  }),
  v.object({
    kind: v.literal("checkpoint"),
    summary: v.optional(text),
    run: v.optional(fn),
    answerSchema: v.optional(AnswerSchemaSchema),
    ...common,
  }),
  v.object({
    kind: v.literal("notify"),
    message: text,
    notifyKind: v.picklist(["progress", "final"]),
    ...common,
  }),
  v.object({
    kind: v.literal("humanDecision"),
    // A function decides the audience from the context when the node runs (0.12 allowed it).
    audience: v.union(
      [v.pipe(v.string(), v.minLength(1)), fn],
      "expected an audience name or a function returning one",
    ),
    choices: v.record(
      v.pipe(v.string(), v.regex(NODE_ID_PATTERN)),
      v.object({ label: v.string(), input: v.optional(textInput) }),
    ),
    request: fn,
    onTimeout: v.optional(v.union([
      v.object({
        afterMs: positiveInt,
        response: v.object({ choice: v.string(), text: v.optional(v.string()) }),
      }),
      fn,
    ], "expected {afterMs, response} or a function returning it")),
    ...common,
  }),
], "expected a node built with agent(), compute(), action(), shell(), checkpoint(), notify(), ...");

const edgeSchema = v.union([
  v.strictObject({ from: v.string(), to: v.string() }),
  v.strictObject({
    from: v.string(),
    switch: v.strictObject({
      on: v.pipe(
        v.string(),
        v.regex(
          /^(\$|\$output|\$result\.output)(\.[A-Za-z0-9_-]+)*$|^\$result\.(outcome|error(\.code|\.message)?|durationMs)$/,
          "expected $.path, $output.path, $result.outcome, $result.error.code, $result.error (its message) or $result.durationMs",
        ),
      ),
      cases: v.record(v.string(), v.string()),
    }),
  }),
], "expected {from, to} or {from, switch: {on, cases}}");

const includeSchema = v.custom<object>((x) => {
  const spec = x as { __piwInclude?: unknown; workflow?: unknown } | null;
  return typeof spec === "object" && spec !== null && spec.__piwInclude === true &&
    ((typeof spec.workflow === "string" && spec.workflow.length > 0) ||
      (typeof spec.workflow === "object" && spec.workflow !== null));
}, "expected includeWorkflow(definition or path)");

export const WorkflowSpecSchema = v.object({
  name: v.pipe(
    v.string(),
    v.regex(WORKFLOW_NAME_PATTERN, "expected letters, digits, '.', '_' or '-'"),
    v.check((n) => !RESERVED_WORKFLOW_NAMES.includes(n), "the name is reserved"),
  ),
  contractId: v.optional(
    v.pipe(
      v.string(),
      v.regex(
        CONTRACT_ID_PATTERN,
        "expected a stable identifier: letters, digits, '.', '_', ':' or '-' (at most 128)",
      ),
    ),
  ),
  title: v.optional(text),
  input: v.optional(syncFn("return the parsed input itself")),
  // 0.12 awaited an async presentationPrompt; here it runs inside the engine's synchronous step.
  presentationPrompt: v.optional(
    v.union([
      v.string(),
      syncFn("return the text itself (from output and state)"),
    ], "expected a string or a function"),
  ),
  startAt: v.string(),
  nodes: v.record(
    v.pipe(
      v.string(),
      v.regex(NODE_ID_PATTERN, "node ids must match [A-Za-z_][A-Za-z0-9_-]*"),
      v.check((id) => !id.startsWith(RESERVED_NODE_PREFIX), "the __piw_ prefix is reserved"),
    ),
    nodeSchema,
  ),
  edges: v.optional(v.array(edgeSchema)),
  includes: v.optional(v.record(
    v.pipe(v.string(), v.regex(NODE_ID_PATTERN, "mount names must match a node id")),
    includeSchema,
  )),
  exits: v.optional(v.record(
    v.pipe(v.string(), v.regex(NODE_ID_PATTERN)),
    v.object({ from: v.string(), validate: v.optional(fn) }),
  )),
  maxSteps: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000))),
  budget: v.optional(BudgetSchema),
  source: v.optional(v.string()),
  /** Read only by `schedule apply` (docs/schedules.md): a file never schedules itself. */
  schedule: v.optional(ScheduleDeclarationSchema),
});

/** The first issue as `path: message`, for one-line errors. */
export function firstIssue(issues: v.BaseIssue<unknown>[]): string {
  const issue = issues[0];
  const path = v.getDotPath(issue);
  // A variant names the node kind it matched, so its nested issue names the real field.
  if (issue.type === "variant" && issue.issues?.length) {
    const nested = issue.issues[0];
    const inner = v.getDotPath(nested);
    const full = [path, inner].filter(Boolean).join(".");
    return `${full || "definition"}: ${plain(nested.message)}`;
  }
  return `${path ?? "definition"}: ${plain(issue.message)}`;
}

function plain(message: string): string {
  if (/^Invalid key: Expected never/.test(message)) return "unknown key";
  if (/^Invalid key: .*received undefined$/.test(message)) return "is missing";
  return message;
}

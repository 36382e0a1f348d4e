/**
 * What a model step used: tokens by kind, the cost Pi reported, and the provider and model that
 * answered. Pi computes each assistant message's cost from its model registry's price table
 * (per million tokens of input, output, cache read and cache write); a model with no price has
 * all rates at zero, so a message with tokens and a zero cost means "no price", never "free":
 * its cost is unknown (`null`), and nothing here makes a number up for it.
 *
 * One shape crosses the worker channel (a headless attempt's usage), the host socket (an
 * interactive submission's usage) and the status receipts; the sums live beside it so the
 * worker, the host, the extension and the CLI add usage the same way.
 */
import * as v from "valibot";
import { CountSchema, strictObject } from "./fields.ts";

const ModelNameSchema = v.nullable(v.pipe(v.string(), v.minLength(1), v.maxLength(200)));
/** A cost in the currency of the model's price table (US dollars in Pi's own tables). */
export const CostSchema = v.pipe(v.number(), v.finite(), v.minValue(0));

const usageEntries = {
  input: CountSchema,
  output: CountSchema,
  cacheRead: CountSchema,
  cacheWrite: CountSchema,
  /** Null when no message of the step had a price. */
  cost: v.nullable(CostSchema),
  /** The provider and model that answered; null when none did or they differed. */
  provider: ModelNameSchema,
  model: ModelNameSchema,
};

/** The most members an agent group has (agent-group.ts AGENT_GROUP_LIMITS.members). */
export const MAX_USAGE_MEMBERS = 16;

export const MemberUsageSchema = strictObject({
  id: v.pipe(v.string(), v.minLength(1), v.maxLength(200)),
  ...usageEntries,
});
export type MemberUsage = v.InferOutput<typeof MemberUsageSchema>;

export const StepUsageSchema = strictObject({
  ...usageEntries,
  /** An agent group's members, each as it used; the fields above are their sum. */
  members: v.optional(v.pipe(v.array(MemberUsageSchema), v.maxLength(MAX_USAGE_MEMBERS))),
});
export type StepUsage = v.InferOutput<typeof StepUsageSchema>;

export const EMPTY_USAGE: StepUsage = Object.freeze({
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  cost: null,
  provider: null,
  model: null,
}) as StepUsage;

/** All tokens of a usage: what a token budget counts. */
export function usageTokens(
  usage: Pick<StepUsage, "input" | "output" | "cacheRead" | "cacheWrite">,
) {
  return usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
}

/**
 * `a + b`. Tokens add; a cost adds the known costs (unknown only when both are); provider and
 * model stay when both agree (or one side has none), else they become null. Members are not
 * carried: a sum of members is `sumMembers`.
 */
export function addUsage(a: StepUsage, b: StepUsage): StepUsage {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    cost: a.cost === null ? b.cost : b.cost === null ? a.cost : roundCost(a.cost + b.cost),
    provider: agree(a, b, "provider"),
    model: agree(a, b, "model"),
  };
}

/** An agent group's usage: every member's, and their sum. */
export function sumMembers(members: readonly MemberUsage[]): StepUsage {
  let total: StepUsage = EMPTY_USAGE;
  for (const { id: _id, ...usage } of members) total = addUsage(total, usage);
  return members.length > 0 ? { ...total, members: [...members] } : total;
}

function agree(a: StepUsage, b: StepUsage, field: "provider" | "model"): string | null {
  if (usageTokens(a) === 0 && a[field] === null) return b[field];
  if (usageTokens(b) === 0 && b[field] === null) return a[field];
  return a[field] === b[field] ? a[field] : null;
}

/** Sums of binary fractions drift (0.1 + 0.2); twelve decimals keep them exact enough to show. */
function roundCost(cost: number): number {
  return Math.round(cost * 1e12) / 1e12;
}

/**
 * The usage of one Pi assistant message (`message_end` RPC records, session entries): Pi's
 * `usage` {input, output, cacheRead, cacheWrite, cost: {total}} with the message's provider and
 * model. Null for anything that is not an assistant message with usage.
 */
export function usageOfPiMessage(message: unknown): StepUsage | null {
  if (typeof message !== "object" || message === null) return null;
  const m = message as { role?: unknown; usage?: unknown; provider?: unknown; model?: unknown };
  if (m.role !== "assistant" || typeof m.usage !== "object" || m.usage === null) return null;
  const u = m.usage as Record<string, unknown>;
  const count = (value: unknown) =>
    typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : 0;
  const usage = {
    input: count(u.input),
    output: count(u.output),
    cacheRead: count(u.cacheRead),
    cacheWrite: count(u.cacheWrite),
  };
  const total = (u.cost as { total?: unknown } | undefined)?.total;
  const priced = typeof total === "number" && Number.isFinite(total) && total > 0;
  const name = (value: unknown) =>
    typeof value === "string" && value.length > 0 ? value.slice(0, 200) : null;
  return {
    ...usage,
    // Zero cost is a model without a price (see the header): unknown, not free.
    cost: priced ? total : null,
    provider: name(m.provider),
    model: name(m.model),
  };
}

/** `usage` as one short line: `12.3k tokens, $0.0421` (tokens only when the cost is unknown). */
export function formatUsage(usage: StepUsage): string {
  const tokens = `${formatTokens(usageTokens(usage))} tokens`;
  return usage.cost === null ? tokens : `${tokens}, ${formatCost(usage.cost)}`;
}

/**
 * `usage` with its kinds and model: `2.8k tokens, $0.0083 (in 1000, out 300, cache read 1400,
 * write 100), fake/fake-model`.
 */
export function formatUsageDetail(usage: Omit<StepUsage, "members">): string {
  const kinds = `in ${usage.input}, out ${usage.output}` +
    (usage.cacheRead || usage.cacheWrite
      ? `, cache read ${usage.cacheRead}, write ${usage.cacheWrite}`
      : "");
  const model = usage.model ? `, ${usage.provider ? `${usage.provider}/` : ""}${usage.model}` : "";
  return `${formatUsage(usage)} (${kinds})${model}`;
}

export function formatTokens(tokens: number): string {
  if (tokens < 1000) return String(tokens);
  if (tokens < 1_000_000) return `${trim(tokens / 1000)}k`;
  return `${trim(tokens / 1_000_000)}M`;
}

/** A cost with enough digits to tell small steps apart: $0.0012, $0.4210, $12.30. */
export function formatCost(cost: number): string {
  if (cost === 0) return "$0";
  if (cost < 0.01) return `$${cost.toFixed(6).replace(/0+$/, "")}`;
  if (cost < 1) return `$${cost.toFixed(4)}`;
  return `$${cost.toFixed(2)}`;
}

function trim(value: number): string {
  return value >= 100 ? value.toFixed(0) : value.toFixed(1).replace(/\.0$/, "");
}

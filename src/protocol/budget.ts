/**
 * A run's budget and spend. The budget comes from the workflow (`defineWorkflow({ budget })`)
 * and the start (`--max-cost`, `--max-tokens`): the smaller limit wins. A model step does not
 * start while the run's committed spend is at or over a limit; the run is blocked
 * `budgetExceeded` until a person raises the budget (`pi-workflows budget <run> --raise USD`)
 * or cancels it. Cost counts the priced usage only (step-usage.ts): a model with no price adds
 * tokens, which a token limit still sees.
 */
import * as v from "valibot";
import { CountSchema, strictObject } from "./fields.ts";
import { CostSchema, formatCost, formatTokens } from "./step-usage.ts";

export const BudgetSchema = strictObject({
  /** At most this cost (in the models' price currency, US dollars for Pi's tables). */
  maxCostUsd: v.optional(CostSchema),
  /** At most this many tokens of every kind (input, output, cache read and write). */
  maxTokens: v.optional(CountSchema),
});
export type Budget = v.InferOutput<typeof BudgetSchema>;

/** A run's spend: all tokens, and the cost of the priced ones (null when none had a price). */
export interface RunSpend {
  tokens: number;
  cost: number | null;
}

/** The smaller of two budgets, limit by limit (a missing limit is no limit). */
export function tighterBudget(a: Budget | undefined, b: Budget | undefined): Budget {
  const min = (x: number | undefined, y: number | undefined) =>
    x === undefined ? y : y === undefined ? x : Math.min(x, y);
  const cost = min(a?.maxCostUsd, b?.maxCostUsd);
  const tokens = min(a?.maxTokens, b?.maxTokens);
  return {
    ...(cost === undefined ? {} : { maxCostUsd: cost }),
    ...(tokens === undefined ? {} : { maxTokens: tokens }),
  };
}

/** True when `spend` is at or over a limit of `budget`. */
export function overBudget(spend: RunSpend, budget: Budget): boolean {
  return (budget.maxTokens !== undefined && spend.tokens >= budget.maxTokens) ||
    (budget.maxCostUsd !== undefined && (spend.cost ?? 0) >= budget.maxCostUsd);
}

/** `spent $1.20 of $1.00 budget, 40k of 50k tokens` (the limits the budget has). */
export function describeSpend(spend: RunSpend, budget: Budget): string {
  const parts: string[] = [];
  if (budget.maxCostUsd !== undefined) {
    parts.push(`spent ${formatCost(spend.cost ?? 0)} of ${formatCost(budget.maxCostUsd)}`);
  }
  if (budget.maxTokens !== undefined) {
    parts.push(`${formatTokens(spend.tokens)} of ${formatTokens(budget.maxTokens)} tokens`);
  }
  return parts.join(", ");
}

/**
 * A run's spend for people: `12.3k tokens, $0.0421` (tokens only when no model had a price),
 * with what a fork adopted (`(2k tokens, $0.01 adopted)`) and its budget when it has one:
 * `… of budget $1.00, 50k tokens`.
 */
export function formatRunSpend(
  spend: RunSpend & { adopted?: RunSpend },
  budget: Budget | undefined,
): string {
  const text = (s: RunSpend) =>
    `${formatTokens(s.tokens)} tokens` + (s.cost === null ? "" : `, ${formatCost(s.cost)}`);
  // A fork's spend starts with what its adopted prefix cost: said apart.
  const used = text(spend) + (spend.adopted ? ` (${text(spend.adopted)} adopted)` : "");
  const limits = [
    budget?.maxCostUsd !== undefined ? formatCost(budget.maxCostUsd) : "",
    budget?.maxTokens !== undefined ? `${formatTokens(budget.maxTokens)} tokens` : "",
  ].filter(Boolean);
  return limits.length === 0 ? used : `${used} of budget ${limits.join(", ")}`;
}

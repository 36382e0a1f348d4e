/**
 * Before a step that spends (a model step or an agent group) starts, the worker compares its
 * run's spend, from the usage its attempts committed, with the run's budget. At or over it, the
 * run stops there and waits for a person (`run.parked {reason: "budgetExceeded"}`); the host
 * checks the same in its commit. A step that crosses the budget while it runs finishes: its
 * work is paid for, and the next one stops.
 */
import { describeSpend, overBudget, type RunSpend } from "../protocol/budget.ts";
import type { RunFacts } from "../protocol/run-facts.ts";
import { addUsage, EMPTY_USAGE, usageTokens } from "../protocol/step-usage.ts";

const SPENDING_KINDS: ReadonlySet<string> = new Set([
  "agent",
  "decision",
  "assistantMessage",
  "agentGroup",
]);

/** The spend of the attempts in `facts`. */
export function spendOf(facts: RunFacts): RunSpend {
  let total = EMPTY_USAGE;
  for (const attempt of facts.attempts) if (attempt.usage) total = addUsage(total, attempt.usage);
  return { tokens: usageTokens(total), cost: total.cost };
}

/** Why `nodeKind` may not start now (the spend against the budget), or null when it may. */
export function budgetStop(nodeKind: string, facts: RunFacts): string | null {
  if (!facts.budget || !SPENDING_KINDS.has(nodeKind)) return null;
  const spend = spendOf(facts);
  return overBudget(spend, facts.budget) ? describeSpend(spend, facts.budget) : null;
}

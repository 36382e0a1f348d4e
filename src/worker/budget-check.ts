/**
 * Before a step that spends (a model step or an agent group) starts, the worker makes sure its
 * run may spend: at or over its budget, or over the budget its controller gives all its child
 * runs together, the run stops there and waits for a person (`run.parked {reason:
 * "budgetExceeded"}`); the host checks the same in its commit. The run's own spend is in its
 * facts; the controller's total moves with its other children, so for a controller's child run
 * (`budgetPool` in its facts) the host is asked (`worker.progress {op: "budget.check"}`,
 * answered from committed facts, no commit); any other run asks nothing. A step
 * that crosses a budget while it runs finishes: its work is paid for, and the next one stops.
 */
import { describeSpend, overBudget, type RunSpend } from "../protocol/budget.ts";
import type { RunFacts } from "../protocol/run-facts.ts";
import { addUsage, EMPTY_USAGE, usageTokens } from "../protocol/step-usage.ts";
import type { Proposer } from "./proposer.ts";

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

/** Why `nodeKind` may not start now by the run's own budget (its facts alone), or null. */
export function ownBudgetStop(nodeKind: string, facts: RunFacts): string | null {
  if (!SPENDING_KINDS.has(nodeKind) || !facts.budget) return null;
  const spend = spendOf(facts);
  return overBudget(spend, facts.budget) ? describeSpend(spend, facts.budget) : null;
}

/** Why `nodeKind` may not start now (the spend against a budget), or null when it may. */
export async function budgetStop(
  nodeKind: string,
  facts: RunFacts,
  proposer: Proposer,
): Promise<string | null> {
  const own = ownBudgetStop(nodeKind, facts);
  if (own !== null) return own;
  // Not a controller's child: no budget but its own (a round trip saved on every handoff).
  if (!SPENDING_KINDS.has(nodeKind) || facts.budgetPool !== true) return null;
  const reply = await proposer.propose("worker.progress", { op: "budget.check" });
  const stop = (reply.result as { stop?: unknown } | undefined)?.stop;
  return typeof stop === "string" ? stop : null;
}

/**
 * Whether a run may start its next model step, from committed facts: its own spend against its
 * own budget, and, for a child run of a controller with a budget, what all the controller's
 * child runs spent together against that budget (a total over the controller's children, not a
 * limit per child: docs/controllers.md "Child runs"). The worker asks before each model step
 * (`worker.progress {op: "budget.check"}`) and the host reads the same when it blocks the run.
 *
 * The controller's budget is what its definition declares (sent with each `workflow.ensure`)
 * plus what people raised it by (`pi-workflows budget <child run> --raise`).
 */
import { type Budget, describeSpend, overBudget, type RunSpend } from "../protocol/budget.ts";
import { budgetOf, readRunBudget, readRunSpend } from "./run-spend.ts";
import type { StateStore } from "./store.ts";
import { queryOneArgs } from "./statements.ts";

/** A controller's budget over its child runs, and what they spent together. */
export interface PoolSpend {
  controllerId: string;
  controllerName: string;
  budget: Budget;
  spend: RunSpend;
}

/** Why the run may not start a model step now (its spend against a budget), or null. */
export function readBudgetStop(store: StateStore, runId: string): string | null {
  const spend = readRunSpend(store, runId);
  const budget = readRunBudget(store, runId);
  if (overBudget(spend, budget)) return describeSpend(spend, budget);
  const pool = readPoolSpend(store, runId);
  if (pool !== null && overBudget(pool.spend, pool.budget)) {
    return `controller ${pool.controllerName}'s child runs ${
      describeSpend(pool.spend, pool.budget)
    }`;
  }
  return null;
}

/**
 * The limits a raise must lift so the run may spend again: those its spend reached, its own or
 * its controller's total over its children (the flag `budget --raise` or `--raise-tokens` names
 * them, and `raiseBudget` accepts either); none reached now (a controller's total raised through
 * another child), those it or its controller has, any of which frees it.
 */
export function readBudgetRaise(store: StateStore, runId: string): (keyof Budget)[] {
  const own = { spend: readRunSpend(store, runId), budget: readRunBudget(store, runId) };
  const pool = readPoolSpend(store, runId);
  const budgets = pool === null ? [own] : [own, pool];
  const reached = (limit: keyof Budget, { spend, budget }: typeof own) =>
    budget[limit] !== undefined &&
    (limit === "maxTokens" ? spend.tokens : spend.cost ?? 0) >= budget[limit];
  const limits = ["maxCostUsd", "maxTokens"] as const;
  const over = limits.filter((limit) => budgets.some((b) => reached(limit, b)));
  return over.length > 0
    ? over
    : limits.filter((limit) => budgets.some((b) => b.budget[limit] !== undefined));
}

/** The pool of the controller whose child `runId` is, when that controller has a budget. */
export function readPoolSpend(store: StateStore, runId: string): PoolSpend | null {
  const row = queryOneArgs<{
    controller_id: string;
    name: string;
    budget_cost: number | null;
    budget_tokens: number | null;
    raised_cost: number;
    raised_tokens: number;
  }>(
    store,
    "SELECT c.controller_id, c.name, c.budget_cost, c.budget_tokens, c.budget_raised_cost AS " +
      "raised_cost, c.budget_raised_tokens AS raised_tokens FROM runs r JOIN controllers c " +
      "ON c.controller_id = r.budget_pool_id WHERE r.run_id = ?1",
    runId,
  );
  if (!row || (row.budget_cost === null && row.budget_tokens === null)) return null;
  // Every run the controller started counts, a cancelled child's and its rerun's alike, and a
  // fork a person made of one (a run retention pruned no longer does); a fork's adopted copies
  // of its parent's attempts do not: the parent counts them.
  const spent = queryOneArgs<{ tokens: number | null; cost: number | null }>(
    store,
    "SELECT SUM(n.usage_tokens) AS tokens, SUM(n.usage_cost) AS cost FROM runs r JOIN " +
      "node_attempts n ON n.run_id = r.run_id WHERE r.budget_pool_id = ?1 AND " +
      "n.usage_tokens IS NOT NULL AND n.adopted_from_attempt_id IS NULL",
    row.controller_id,
  );
  return {
    controllerId: row.controller_id,
    controllerName: row.name,
    budget: budgetOf(
      row.budget_cost === null ? null : row.budget_cost + row.raised_cost,
      row.budget_tokens === null ? null : row.budget_tokens + row.raised_tokens,
    ),
    spend: { tokens: spent?.tokens ?? 0, cost: spent?.cost ?? null },
  };
}

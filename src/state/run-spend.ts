/**
 * What a run's model steps used, from the usage each attempt carries (node_attempts.usage_*):
 * the spend a budget is checked against and `status`/`list` show. An attempt's usage is always
 * its whole usage so far, set (never added) by each report, so a replayed or repeated report
 * counts once; an interrupted attempt keeps what it reported, so a crash loses none of it.
 */
import type { Budget, RunSpend } from "../protocol/budget.ts";
import { type StepUsage, usageTokens } from "../protocol/step-usage.ts";
import { type StateStore } from "./store.ts";
import { queryOneArgs } from "./statements.ts";
import { encodeValue } from "./values.ts";

/** The spend and budget columns a run row reads with RUN_SPEND_COLUMNS and ADOPTED_SPEND_COLUMNS. */
export interface RunSpendRow {
  spend_tokens: number | null;
  spend_cost: number | null;
  adopted_tokens: number | null;
  adopted_cost: number | null;
  budget_cost: number | null;
  budget_tokens: number | null;
}

/** Columns of the run's spend for a query over `runs r` (node_attempts_usage covers them). */
export const RUN_SPEND_COLUMNS =
  "(SELECT SUM(n.usage_tokens) FROM node_attempts n WHERE n.run_id = r.run_id AND " +
  "n.usage_tokens IS NOT NULL) AS spend_tokens, (SELECT SUM(n.usage_cost) FROM node_attempts n " +
  "WHERE n.run_id = r.run_id AND n.usage_tokens IS NOT NULL) AS spend_cost";

/**
 * What a fork's adopted attempts cost (NULL for a run that is no fork), shown apart from what the
 * fork spent itself; they count toward its budget like the rest.
 */
export const ADOPTED_SPEND_COLUMNS =
  "CASE WHEN r.forked_from_run_id IS NULL THEN NULL ELSE (SELECT SUM(n.usage_tokens) FROM " +
  "node_attempts n WHERE n.run_id = r.run_id AND n.adopted_from_attempt_id IS NOT NULL) END " +
  "AS adopted_tokens, CASE WHEN r.forked_from_run_id IS NULL THEN NULL ELSE (SELECT " +
  "SUM(n.usage_cost) FROM node_attempts n WHERE n.run_id = r.run_id AND " +
  "n.adopted_from_attempt_id IS NOT NULL) END AS adopted_cost";

/** The three usage columns of an attempt, as bound parameters. */
export function usageColumns(
  usage: StepUsage,
): { json: string; tokens: number; cost: number | null } {
  return {
    json: encodeValue("attempt usage", usage),
    tokens: usageTokens(usage),
    cost: usage.cost,
  };
}

/** What an event says of an attempt's usage: its sums (followers show them). */
export function usageSums(columns: { tokens: number; cost: number | null }): {
  [key: string]: number | null;
} {
  return { cost: columns.cost, tokens: columns.tokens };
}

export function readRunSpend(store: StateStore, runId: string): RunSpend {
  const row = queryOneArgs<{ tokens: number | null; cost: number | null }>(
    store,
    "SELECT SUM(usage_tokens) AS tokens, SUM(usage_cost) AS cost FROM node_attempts " +
      "WHERE run_id = ?1 AND usage_tokens IS NOT NULL",
    runId,
  );
  return { tokens: row?.tokens ?? 0, cost: row?.cost ?? null };
}

export function readRunBudget(store: StateStore, runId: string): Budget {
  const row = queryOneArgs<{ budget_cost: number | null; budget_tokens: number | null }>(
    store,
    "SELECT budget_cost, budget_tokens FROM runs WHERE run_id = ?1",
    runId,
  );
  return budgetOf(row?.budget_cost ?? null, row?.budget_tokens ?? null);
}

/** The budget of two nullable columns. */
export function budgetOf(cost: number | null, tokens: number | null): Budget {
  return {
    ...(cost === null ? {} : { maxCostUsd: cost }),
    ...(tokens === null ? {} : { maxTokens: tokens }),
  };
}

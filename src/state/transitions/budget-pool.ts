/**
 * A controller's budget over all its child runs (state/budget-stop.ts) raised by a person, from
 * one of its children (`pi-workflows budget <child run> --raise`): the raise goes on top of what
 * the controller's definition declares, and every other child blocked `budgetExceeded` that may
 * now spend is unblocked in the same transaction (event `run.budgetRaised` on each, with its own
 * revision), so the scheduler launches them again.
 */
import type { StateStore } from "../store.ts";
import { execute, queryAll } from "../statements.ts";
import { appendHistory, nextRevision } from "../journal.ts";
import { readBudgetStop } from "../budget-stop.ts";

/** Adds to the pool's limits that exist. */
export function raisePool(
  store: StateStore,
  controllerId: string,
  raise: { cost?: number; tokens?: number },
): void {
  execute(
    store,
    "UPDATE controllers SET budget_raised_cost = budget_raised_cost + CASE WHEN budget_cost IS " +
      "NULL THEN 0 ELSE :cost END, budget_raised_tokens = budget_raised_tokens + CASE WHEN " +
      "budget_tokens IS NULL THEN 0 ELSE :tokens END WHERE controller_id = :controllerId",
    { controllerId, cost: raise.cost ?? 0, tokens: raise.tokens ?? 0 },
  );
}

/** Unblocks the pool's other blocked children that may spend now; returns how many. */
export function unblockPoolChildren(
  store: StateStore,
  controllerId: string,
  exceptRunId: string,
  now: number,
): number {
  const blocked = queryAll<{ run_id: string; state: string; queue_state: string }>(
    store,
    "SELECT r.run_id, r.state, q.state AS queue_state FROM runs r JOIN run_queue q " +
      "ON q.run_id = r.run_id WHERE r.budget_pool_id = :controllerId AND r.run_id != :exceptRunId " +
      "AND r.blocked_reason = 'budgetExceeded'",
    { controllerId, exceptRunId },
  );
  let unblocked = 0;
  for (const run of blocked) {
    if (readBudgetStop(store, run.run_id) !== null) continue;
    const revision = nextRevision(store, run.run_id);
    execute(
      store,
      "UPDATE runs SET blocked_reason = NULL, blocked_detail = NULL WHERE run_id = :runId",
      { runId: run.run_id },
    );
    appendHistory(store, run.run_id, revision, now, {
      type: "run.budgetRaised",
      payload: { pool: true, unblocked: true },
      summary: { state: run.state, queue: run.queue_state },
    });
    unblocked++;
  }
  return unblocked;
}

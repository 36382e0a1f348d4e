/**
 * A run's budget (protocol/budget.ts): the worker of a run whose spend reached its budget stops
 * before its next model step, and the run waits blocked `budgetExceeded` for a person, who
 * raises the budget (`raiseBudget`, the `budget` command) or cancels the run. Spend is what the
 * run's attempts recorded (run-spend.ts), so a block and a raise both read committed facts.
 */
import type { Budget } from "../../protocol/budget.ts";
import { type Claim, claimRunId, releaseLeaseInTx } from "../claims.ts";
import {
  type ProtectedChange,
  protectedWrite,
  workerTarget,
  type WorkerWriteOptions,
} from "../protected-write.ts";
import { TransitionError } from "../errors.ts";
import type { CommandReceiptInput } from "../host-commands.ts";
import { budgetOf, readRunBudget } from "../run-spend.ts";
import { readBudgetStop, readPoolSpend } from "../budget-stop.ts";
import { raisePool, unblockPoolChildren } from "./budget-pool.ts";
import { type StateStore } from "../store.ts";
import { execute } from "../statements.ts";
import { expectState, isTerminalRunState, setQueueState } from "./common.ts";
import { command, type CommandResult } from "./run-commands.ts";

const isActive = (r: { state: string; queue_state: string }) =>
  r.state === "running" && (r.queue_state === "running" || r.queue_state === "starting");

/**
 * `running/running` -> `running/parked`, blocked `budgetExceeded` (between nodes: no attempt is
 * open). The worker saw the spend at or over the budget of its facts; when a person raised the
 * budget since, the run only parks, and the next worker reads the new budget.
 */
export function blockOverBudget(
  store: StateStore,
  claim: Claim,
  opts: WorkerWriteOptions,
): { revision: number; blocked: boolean } {
  const runId = claimRunId(claim);
  const { revision, result } = protectedWrite(store, claim, workerTarget(runId, opts), (tx) => {
    expectState(tx.run, "block over budget", isActive);
    const stop = readBudgetStop(store, runId);
    const blocked = stop !== null;
    setQueueState(store, runId, "parked", tx.now);
    releaseLeaseInTx(store, claim.resource, tx.now);
    if (blocked) {
      execute(
        store,
        "UPDATE runs SET blocked_reason = 'budgetExceeded', blocked_detail = :detail " +
          "WHERE run_id = :runId",
        { runId, detail: stop },
      );
    }
    const change: ProtectedChange<boolean> = blocked
      ? {
        type: "run.blocked",
        payload: { reason: "budgetExceeded" },
        summary: { state: "running", queue: "parked", blocked: "budgetExceeded" },
        result: true,
      }
      : {
        type: "run.parked",
        payload: { reason: "budgetRaised", blocked: false },
        summary: { state: "running", queue: "parked", reason: "budgetRaised" },
        result: false,
      };
    return change;
  });
  return { revision, blocked: result };
}

export interface RaiseBudgetOptions {
  runId: string;
  /** Added to the cost limit. */
  raiseCostUsd?: number;
  /** Added to the token limit. */
  raiseTokens?: number;
  receipt?: CommandReceiptInput;
  expectedRevision?: number;
}

/**
 * Raises the budget of a run that is not running now (blocked at its budget, waiting, paused,
 * queued): a running worker holds the run's facts, its budget among them. By the amounts given;
 * a controller's child raises its controller's total over its children too (budget-pool.ts). A
 * run blocked `budgetExceeded` that may now spend is unblocked in the same transaction, so the
 * scheduler launches it again; one still over stays blocked (the receipt shows its budget).
 */
export function raiseBudget(
  store: StateStore,
  opts: RaiseBudgetOptions,
): CommandResult & { budget: Budget; unblocked: boolean } {
  let budget: Budget = {};
  let unblocked = false;
  const result = command(
    store,
    {
      runId: opts.runId,
      claim: null,
      receipt: opts.receipt,
      expectedRevision: opts.expectedRevision,
    },
    "raise the budget of",
    (r) =>
      !isTerminalRunState(r.state) &&
      !(r.state === "running" && (r.queue_state === "running" || r.queue_state === "starting")),
    (run, now) => {
      const before = readRunBudget(store, run.run_id);
      // A controller's child: the raise lifts the controller's total over its children too.
      const pool = readPoolSpend(store, run.run_id);
      const has = (limit: keyof Budget) =>
        before[limit] !== undefined || pool?.budget[limit] !== undefined;
      const missing = [
        opts.raiseCostUsd !== undefined && !has("maxCostUsd") ? "cost" : "",
        opts.raiseTokens !== undefined && !has("maxTokens") ? "token" : "",
      ].filter(Boolean);
      if (missing.length > 0) {
        // Name the limit it has, so the refusal says which flag works.
        // None at all: nothing about its spend will ever stop it, so there is nothing to do.
        const other = has("maxTokens") && !has("maxCostUsd")
          ? ": it has a token limit, raised with --raise-tokens <N>"
          : has("maxCostUsd") && !has("maxTokens")
          ? ": it has a cost limit, raised with --raise <USD>"
          : !has("maxTokens") && !has("maxCostUsd")
          ? ": it has no budget, so its spend never stops it (a budget is set when a run " +
            "starts: start --max-cost or --max-tokens, or the workflow's own)"
          : "";
        throw new TransitionError(
          run.run_id,
          "raise the budget of",
          `it has no ${missing.join(" or ")} limit to raise${other}`,
        );
      }
      const raise = (limit: number | undefined, by: number | undefined) =>
        limit === undefined || by === undefined ? limit : limit + by;
      budget = budgetOf(
        raise(before.maxCostUsd, opts.raiseCostUsd) ?? null,
        raise(before.maxTokens, opts.raiseTokens) ?? null,
      );
      execute(
        store,
        "UPDATE runs SET budget_cost = :cost, budget_tokens = :tokens WHERE run_id = :runId",
        { runId: run.run_id, cost: budget.maxCostUsd ?? null, tokens: budget.maxTokens ?? null },
      );
      if (pool !== null) {
        raisePool(store, pool.controllerId, { cost: opts.raiseCostUsd, tokens: opts.raiseTokens });
        unblockPoolChildren(store, pool.controllerId, run.run_id, now);
      }
      const stop = run.blocked_reason === "budgetExceeded"
        ? readBudgetStop(store, run.run_id)
        : null;
      unblocked = run.blocked_reason === "budgetExceeded" && stop === null;
      if (run.blocked_reason === "budgetExceeded") {
        execute(
          store,
          unblocked
            ? "UPDATE runs SET blocked_reason = NULL, blocked_detail = NULL WHERE run_id = :runId"
            : "UPDATE runs SET blocked_detail = :detail WHERE run_id = :runId",
          { runId: run.run_id, ...(unblocked ? {} : { detail: stop }) },
        );
      }
      return {
        type: "run.budgetRaised",
        payload: {
          ...(budget.maxCostUsd !== undefined ? { maxCostUsd: budget.maxCostUsd } : {}),
          ...(budget.maxTokens !== undefined ? { maxTokens: budget.maxTokens } : {}),
          unblocked,
        },
        summary: {
          state: run.state,
          queue: run.queue_state,
          ...(run.blocked_reason === "budgetExceeded" && !unblocked
            ? { blocked: "budgetExceeded" }
            : {}),
        },
      };
    },
  );
  return { ...result, budget, unblocked };
}

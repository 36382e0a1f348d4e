/**
 * A run's budget (protocol/budget.ts): the worker of a run whose spend reached its budget stops
 * before its next model step, and the run waits blocked `budgetExceeded` for a person, who
 * raises the budget (`raiseBudget`, the `budget` command) or cancels the run. Spend is what the
 * run's attempts recorded (run-spend.ts), so a block and a raise both read committed facts.
 */
import { type Budget, describeSpend, overBudget } from "../../protocol/budget.ts";
import { type Claim, claimRunId, releaseLeaseInTx } from "../claims.ts";
import {
  type ProtectedChange,
  protectedWrite,
  workerTarget,
  type WorkerWriteOptions,
} from "../protected-write.ts";
import { TransitionError } from "../errors.ts";
import type { CommandReceiptInput } from "../host-commands.ts";
import { readRunBudget, readRunSpend } from "../run-spend.ts";
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
    const spend = readRunSpend(store, runId);
    const budget = readRunBudget(store, runId);
    const blocked = overBudget(spend, budget);
    setQueueState(store, runId, "parked", tx.now);
    releaseLeaseInTx(store, claim.resource, tx.now);
    if (blocked) {
      execute(
        store,
        "UPDATE runs SET blocked_reason = 'budgetExceeded', blocked_detail = :detail " +
          "WHERE run_id = :runId",
        { runId, detail: describeSpend(spend, budget) },
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
 * queued): a running worker holds the run's facts, its budget among them. By the amounts given. A run blocked `budgetExceeded` whose spend is
 * now under the raised budget is unblocked in the same transaction, so the scheduler launches it
 * again; one still over stays blocked (the receipt shows its budget).
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
    (run) => {
      const before = readRunBudget(store, run.run_id);
      const missing = [
        opts.raiseCostUsd !== undefined && before.maxCostUsd === undefined ? "a cost" : "",
        opts.raiseTokens !== undefined && before.maxTokens === undefined ? "a token" : "",
      ].filter(Boolean);
      if (missing.length > 0) {
        throw new TransitionError(
          run.run_id,
          "raise the budget of",
          "running",
          `it has no ${missing.join(" or ")} limit to raise`,
        );
      }
      budget = {
        ...before,
        ...(opts.raiseCostUsd !== undefined
          ? { maxCostUsd: before.maxCostUsd! + opts.raiseCostUsd }
          : {}),
        ...(opts.raiseTokens !== undefined
          ? { maxTokens: before.maxTokens! + opts.raiseTokens }
          : {}),
      };
      const spend = readRunSpend(store, run.run_id);
      unblocked = run.blocked_reason === "budgetExceeded" && !overBudget(spend, budget);
      execute(
        store,
        "UPDATE runs SET budget_cost = :cost, budget_tokens = :tokens" +
          (unblocked ? ", blocked_reason = NULL, blocked_detail = NULL" : "") +
          (run.blocked_reason === "budgetExceeded" && !unblocked
            ? ", blocked_detail = :detail"
            : "") +
          " WHERE run_id = :runId",
        {
          runId: run.run_id,
          cost: budget.maxCostUsd ?? null,
          tokens: budget.maxTokens ?? null,
          ...(run.blocked_reason === "budgetExceeded" && !unblocked
            ? { detail: describeSpend(spend, budget) }
            : {}),
        },
      );
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

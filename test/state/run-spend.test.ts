/**
 * What attempts used and what runs spent (run-spend.ts), and budgets (transitions/run-budget.ts):
 * a report sets the attempt's whole usage (a repeat counts once), an outcome carries the final
 * one, an interrupted attempt keeps what it reported (pause, crash), a run over its budget is
 * blocked and a raise frees it, and a fork's adopted attempts keep their usage and its parent's
 * budget.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { StepUsage } from "../../src/protocol/step-usage.ts";
import { type Claim } from "../../src/state/claims.ts";
import { BudgetExceededError, TransitionError } from "../../src/state/errors.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { listAttempts, readRun, readRunFacts } from "../../src/state/queries.ts";
import { readRunSpend } from "../../src/state/run-spend.ts";
import {
  recordNodeFinished,
  recordNodeStarted,
  recordNodeUsage,
} from "../../src/state/transitions/node-attempts.ts";
import { blockOverBudget, raiseBudget } from "../../src/state/transitions/run-budget.ts";
import { pauseRun, resumeRun } from "../../src/state/transitions/run-commands.ts";
import { failRun } from "../../src/state/transitions/run-end.ts";
import { forkRun } from "../../src/state/transitions/run-fork.ts";
import { finishWorkerEpoch } from "../../src/state/transitions/workers.ts";
import { queryOne } from "../../src/state/statements.ts";
import { enqueue, type Fixture, launch, openFixture } from "../support/state-store.ts";

let fx: Fixture;
beforeEach(() => (fx = openFixture()));
afterEach(() => fx.close());

function usage(input: number, output: number, cost: number | null): StepUsage {
  return { input, output, cacheRead: 0, cacheWrite: 0, cost, provider: "p", model: "m" };
}

function start(claim: Claim, nodeId: string): string {
  const attemptId = fx.store.ids.next("attempt");
  // Pure, as an agent step that may run again after an interruption is.
  recordNodeStarted(fx.store, claim, {
    attemptId,
    nodeId,
    nodeKind: "agent",
    effect: "pure",
    deadlineAt: null,
  });
  return attemptId;
}

describe("attempt usage and run spend", () => {
  it("sets an attempt's whole usage on each report; the outcome's usage is the final one", () => {
    const runId = enqueue(fx.store);
    const claim = launch(fx.store, runId);
    const a = start(claim, "plan");
    recordNodeUsage(fx.store, claim, { attemptId: a, usage: usage(100, 10, 0.5) });
    // The same total again (a retry, an overtaken report): still counted once.
    recordNodeUsage(fx.store, claim, { attemptId: a, usage: usage(100, 10, 0.5) });
    expect(readRunSpend(fx.store, runId)).toEqual({ tokens: 110, cost: 0.5 });
    recordNodeFinished(fx.store, claim, {
      attemptId: a,
      output: { ok: true },
      usage: usage(300, 20, 1.25),
    });
    const b = start(claim, "write");
    recordNodeFinished(fx.store, claim, { attemptId: b, output: 1, usage: usage(50, 5, null) });
    expect(readRunSpend(fx.store, runId)).toEqual({ tokens: 375, cost: 1.25 });
    const view = readRun(fx.store, runId)!;
    expect(view.spend).toEqual({ tokens: 375, cost: 1.25 });
    expect(listAttempts(fx.store, runId).map((x) => x.usage?.input)).toEqual([300, 50]);
    // The worker's facts carry each attempt's usage.
    expect(readRunFacts(fx.store, runId).attempts[1].usage).toEqual(usage(50, 5, null));
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("an attempt a pause interrupts keeps what it reported, counted once after resume", () => {
    const runId = enqueue(fx.store);
    const claim = launch(fx.store, runId);
    const a = start(claim, "plan");
    recordNodeUsage(fx.store, claim, { attemptId: a, usage: usage(100, 10, 0.5) });
    pauseRun(fx.store, { runId, claim });
    expect(listAttempts(fx.store, runId)[0]).toMatchObject({ state: "interrupted" });
    finishWorkerEpoch(fx.store, {
      workerEpoch: queryOne<{ e: string }>(
        fx.store,
        "SELECT worker_epoch AS e FROM run_workers WHERE run_id = :runId",
        { runId },
      )!.e,
      status: "cancelled",
      exitCode: null,
      signal: "SIGTERM",
      diagnosticHash: null,
    });
    resumeRun(fx.store, { runId });
    const again = launch(fx.store, runId);
    const b = start(again, "plan");
    recordNodeFinished(fx.store, again, { attemptId: b, output: 1, usage: usage(40, 4, 0.25) });
    expect(readRunSpend(fx.store, runId)).toEqual({ tokens: 154, cost: 0.75 });
  });
});

describe("budgets", () => {
  it("blocks a run at its budget; resume is refused; a raise above the spend frees it", () => {
    const runId = enqueue(fx.store, { budget: { maxCostUsd: 1 } });
    expect(readRunFacts(fx.store, runId).budget).toEqual({ maxCostUsd: 1 });
    // No controller's child: its worker asks the host nothing before a model step.
    expect(readRunFacts(fx.store, runId).budgetPool).toBeUndefined();
    const claim = launch(fx.store, runId);
    const a = start(claim, "plan");
    recordNodeFinished(fx.store, claim, { attemptId: a, output: 1, usage: usage(10, 1, 1.5) });
    expect(blockOverBudget(fx.store, claim, {}).blocked).toBe(true);
    const blocked = readRun(fx.store, runId)!;
    expect([blocked.state, blocked.queueState, blocked.blockedReason]).toEqual([
      "running",
      "parked",
      "budgetExceeded",
    ]);
    expect(() => resumeRun(fx.store, { runId })).toThrow(BudgetExceededError);
    // A token limit it does not have cannot be raised; a raise still under the spend keeps it.
    // The refusal names the flag that works.
    expect(() => raiseBudget(fx.store, { runId, raiseTokens: 10 })).toThrow(
      /^Cannot raise the budget of run \S+: it has no token limit to raise: it has a cost limit, raised with --raise <USD>$/,
    );
    expect(raiseBudget(fx.store, { runId, raiseCostUsd: 0.25 }).unblocked).toBe(false);
    expect(readRun(fx.store, runId)!.blockedReason).toBe("budgetExceeded");
    const raised = raiseBudget(fx.store, { runId, raiseCostUsd: 1 });
    expect(raised).toMatchObject({ unblocked: true, budget: { maxCostUsd: 2.25 } });
    expect(readRun(fx.store, runId)!.blockedReason).toBeNull();
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("refuses to raise a run with no budget, saying that nothing about its spend stops it", () => {
    const runId = enqueue(fx.store);
    expect(() => raiseBudget(fx.store, { runId, raiseCostUsd: 1 })).toThrow(
      /it has no cost limit to raise: it has no budget, so its spend never stops it \(a budget is set when a run starts: start --max-cost or --max-tokens, or the workflow's own\)$/,
    );
  });

  it("refuses to raise the budget of a running run, and parks one raised since its worker read it", () => {
    const runId = enqueue(fx.store, { budget: { maxTokens: 100 } });
    const claim = launch(fx.store, runId);
    expect(() => raiseBudget(fx.store, { runId, raiseTokens: 10 })).toThrow(TransitionError);
    // Under budget when the host checks: the run parks (a new worker reads the budget), unblocked.
    expect(blockOverBudget(fx.store, claim, {}).blocked).toBe(false);
    const parked = readRun(fx.store, runId)!;
    expect([parked.queueState, parked.blockedReason]).toEqual(["parked", null]);
  });

  it("a fork keeps its parent's budget and the usage of what it adopts, shown apart", () => {
    const runId = enqueue(fx.store, { budget: { maxCostUsd: 5 } });
    const claim = launch(fx.store, runId);
    const plan = start(claim, "plan");
    recordNodeFinished(fx.store, claim, { attemptId: plan, output: 1, usage: usage(100, 10, 2) });
    const ship = start(claim, "ship");
    recordNodeFinished(fx.store, claim, { attemptId: ship, output: 2, usage: usage(7, 1, 1) });
    failRun(fx.store, claim, { error: { code: "x", message: "x" } });
    const fork = forkRun(fx.store, {
      workflowName: "demo",
      workflowRef: "builtin:demo",
      projectPath: "/project",
      workflowSource: { root: { kind: "builtin", id: "demo" }, mounted: [] },
      definitionDigest: "sha256:def",
      input: { task: "x" },
      inputHash: "sha256:in",
      binding: { executionMode: "headless" },
      parentRunId: runId,
      fromNodeId: "ship",
      source: "recorded",
    });
    const view = readRun(fx.store, fork.runId)!;
    expect(view.budget).toEqual({ maxCostUsd: 5 });
    expect(view.spend).toEqual({ tokens: 110, cost: 2 });
    expect(view.adoptedSpend).toEqual({ tokens: 110, cost: 2 });
    expect(readRun(fx.store, runId)!.adoptedSpend).toBeNull();
    expect(checkInvariants(fx.store)).toEqual([]);
  });
});

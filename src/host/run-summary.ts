/**
 * The public view of a run that `run.*` receipts carry: ids, states, revision, times, the final
 * output or error. Never the project path, the workflow path, the input or the origin session.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { receiptJson } from "../protocol/host-response.ts";
import type { OperationReceipt } from "../protocol/host-operations.ts";
import type { BlockedReason, RunSummary } from "../protocol/run-operations.ts";
import { readRun, type RunView } from "../state/queries.ts";
import type { ReceiptTarget } from "../state/host-commands.ts";
import type { StateStore } from "../state/store.ts";

/** What every run command answers (`RunCommandReceiptSchema`). */
export type RunCommandReceipt = OperationReceipt<"run.start">;

export function runSummary(view: RunView): RunSummary {
  const summary: RunSummary = {
    runId: view.runId,
    workflowName: view.workflowName,
    title: view.title,
    state: view.state as RunSummary["state"],
    queueState: view.queueState as RunSummary["queueState"],
    paused: view.paused,
    revision: view.revision,
    executionMode: view.executionMode,
    createdAt: view.createdAt,
    updatedAt: view.updatedAt,
  };
  if (view.blockedReason !== null) summary.blockedReason = view.blockedReason as BlockedReason;
  if (view.budgetStop !== null) summary.budgetStop = view.budgetStop;
  if (view.budgetRaise !== null) summary.budgetRaise = view.budgetRaise;
  if (view.forkedFrom !== null) summary.forkedFrom = view.forkedFrom;
  if (view.output !== undefined && view.state === "completed") summary.output = view.output;
  if (view.error) summary.error = view.error;
  const budgeted = view.budget.maxCostUsd !== undefined || view.budget.maxTokens !== undefined;
  if (view.spend.tokens > 0 || budgeted) {
    summary.spend = {
      ...view.spend,
      ...(view.adoptedSpend && view.adoptedSpend.tokens > 0
        ? { adopted: { ...view.adoptedSpend } }
        : {}),
    };
  }
  if (budgeted) summary.budget = { ...view.budget };
  return summary;
}

/** The receipt of a run command (`run.start`, `run.pause`, ...): the run as committed. */
export function runReceipt(summary: RunSummary): RunCommandReceipt {
  return { run: summary };
}

/**
 * A receipt function for a run command: evaluated inside the command's transaction, after the
 * change, so the stored receipt is exactly the committed run. `body()` returns what it produced.
 */
export function committedRunReceipt(store: StateStore): {
  receipt: (target: ReceiptTarget) => JsonValue;
  body(): RunCommandReceipt;
} {
  let body: RunCommandReceipt | null = null;
  return {
    receipt: (target) => {
      const view = target.runId === null ? undefined : readRun(store, target.runId);
      if (!view) throw new Error("Command receipt failed: the run is missing after its change");
      body = runReceipt(runSummary(view));
      return receiptJson(body);
    },
    body: () => {
      if (!body) throw new Error("Command receipt failed: the receipt was not produced");
      return body;
    },
  };
}

/**
 * The public view of a run that `run.*` receipts carry: ids, states, revision, times, the final
 * output or error. Never the project path, the workflow path, the input or the origin session.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { RunSummary } from "../protocol/run-operations.ts";
import type { RunView } from "../state/queries.ts";

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
  if (view.blockedReason !== null) {
    (summary as RunSummary & { blockedReason?: string }).blockedReason = view.blockedReason;
  }
  if (view.output !== undefined && view.state === "completed") summary.output = view.output;
  if (view.error) summary.error = view.error;
  return summary;
}

/** A summary as a JSON receipt body. */
export function runReceipt(summary: RunSummary): { [key: string]: JsonValue } {
  return { run: JSON.parse(JSON.stringify(summary)) as JsonValue };
}

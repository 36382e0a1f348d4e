/**
 * `run.parked {reason: "budgetExceeded"}`: the worker found its run's spend at or over its
 * budget before a model step. The host checks the committed spend and budget in the same
 * transaction (a person may have raised it since the worker read its facts).
 */
import { blockOverBudget } from "../../state/transitions/run-budget.ts";
import type { WorkerWriteOptions } from "../../state/protected-write.ts";
import type { ActiveWorker } from "../supervision/active-worker.ts";
import type { HostContext } from "../host-context.ts";
import type { Applied } from "./applied.ts";
import { markSettled } from "../supervision/worker-life.ts";

export function parkOverBudget(
  ctx: HostContext,
  worker: ActiveWorker,
  write: WorkerWriteOptions,
): Applied {
  const { revision, blocked } = blockOverBudget(ctx.store, worker.claim, write);
  if (blocked) ctx.log("run.blocked", { run: worker.runId, reason: "budgetExceeded" });
  markSettled(worker);
  return { revision, closedAttempt: true };
}

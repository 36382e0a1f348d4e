/**
 * `run.budget`: a person raises a run's budget (`pi-workflows budget <run> --raise USD`). A run
 * blocked at its budget whose spend is now under it is unblocked in the same commit, with the
 * command receipt (a controller's child: with its siblings that may spend again), and the
 * scheduler is woken to launch them.
 */
import type { HostRequest } from "../protocol/host-request.ts";
import { type HostResponse, receiptResponse } from "../protocol/host-response.ts";
import type { CommandReceiptInput } from "../state/host-commands.ts";
import { raiseBudget } from "../state/transitions/run-budget.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { committedRunReceipt } from "./run-summary.ts";

export function raiseBudgetCommand(
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
): Promise<HostResponse> {
  if (request.operation !== "run.budget") throw new TypeError("Expected run.budget");
  const runId = request.runId!;
  const committed = committedRunReceipt(rt.store);
  const result = raiseBudget(rt.store, {
    runId,
    ...request.payload,
    expectedRevision: request.expectedRevision,
    receipt: { ...receipt, receipt: committed.receipt },
  });
  rt.log("run.budget", { runId, revision: result.revision, unblocked: result.unblocked });
  // A controller's child may have freed its siblings too (state/transitions/budget-pool.ts).
  rt.supervision.wake();
  return Promise.resolve(
    receiptResponse(request, rt.epoch, committed.body(), { revision: result.revision }),
  );
}

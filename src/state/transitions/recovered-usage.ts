/**
 * What an interrupted attempt used, as the worker that runs its step again read it back from the
 * step's Pi session (worker/interrupted-usage.ts). A worker killed after its model's submitting
 * call but before the outcome's commit took that call's usage with it; the session still holds
 * it. The whole usage is set, never lowered: what the attempt already recorded is part of the
 * session's sum, and a repeated report changes nothing. Event `node.usage` with the sums only.
 */
import { formatUsage, type StepUsage } from "../../protocol/step-usage.ts";
import { type Claim, claimRunId } from "../claims.ts";
import { TransitionError } from "../errors.ts";
import { protectedWrite, workerTarget, type WorkerWriteOptions } from "../protected-write.ts";
import { usageColumns, usageSums } from "../run-spend.ts";
import { type StateStore } from "../store.ts";
import { executeArgs, queryOneArgs } from "../statements.ts";
import { describeState, expectState } from "./common.ts";
import { isLive } from "./node-attempts.ts";

export function recordRecoveredUsage(
  store: StateStore,
  claim: Claim,
  opts: { attemptId: string; usage: StepUsage } & WorkerWriteOptions,
): { revision: number } {
  const runId = claimRunId(claim);
  const usage = usageColumns(opts.usage);
  const transition = "record the recovered usage of an attempt of";
  const { revision } = protectedWrite(store, claim, workerTarget(runId, opts), (tx) => {
    expectState(tx.run, transition, isLive);
    const row = queryOneArgs<{ state: string }>(
      store,
      "SELECT state FROM node_attempts WHERE attempt_id = ?1 AND run_id = ?2",
      opts.attemptId,
      runId,
    );
    if (row?.state !== "interrupted") {
      throw new TransitionError(
        runId,
        transition,
        describeState(tx.run),
        `attempt ${opts.attemptId} is ${row?.state ?? "unknown"}, not interrupted`,
      );
    }
    executeArgs(
      store,
      "UPDATE node_attempts SET usage_json = ?1, usage_tokens = ?2, usage_cost = ?3 " +
        "WHERE attempt_id = ?4 AND (usage_tokens IS NULL OR usage_tokens < ?2)",
      usage.json,
      usage.tokens,
      usage.cost,
      opts.attemptId,
    );
    return {
      type: "node.usage",
      payload: { attemptId: opts.attemptId, recovered: true, usage: usageSums(usage) },
      summary: { attemptId: opts.attemptId, state: "running", usage: formatUsage(opts.usage) },
      result: undefined,
    };
  });
  return { revision };
}

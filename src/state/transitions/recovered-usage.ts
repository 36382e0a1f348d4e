/**
 * What an interrupted attempt used, as the worker that runs its step again read it back from the
 * step's Pi session (worker/interrupted-usage.ts). A worker killed after its model's submitting
 * call but before the outcome's commit took that call's usage with it; the session still holds
 * it. The whole usage is set, never lowered: what the attempt already recorded is part of the
 * session's sum, and a repeated report changes nothing. Likewise the count of submissions (an
 * accepted one rides on the outcome, so the crash took it too): raised to the session's count,
 * never lowered. Event `node.usage` with the sums only.
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
  opts: { attemptId: string; usage?: StepUsage; submitted?: number } & WorkerWriteOptions,
): { revision: number } {
  const runId = claimRunId(claim);
  const usage = opts.usage === undefined ? null : usageColumns(opts.usage);
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
    if (usage !== null) {
      executeArgs(
        store,
        "UPDATE node_attempts SET usage_json = ?1, usage_tokens = ?2, usage_cost = ?3 " +
          "WHERE attempt_id = ?4 AND (usage_tokens IS NULL OR usage_tokens < ?2)",
        usage.json,
        usage.tokens,
        usage.cost,
        opts.attemptId,
      );
    }
    if (opts.submitted !== undefined) {
      executeArgs(
        store,
        "UPDATE node_attempts SET submitted = ?1 WHERE attempt_id = ?2 AND submitted < ?1",
        opts.submitted,
        opts.attemptId,
      );
    }
    return {
      type: "node.usage",
      payload: {
        attemptId: opts.attemptId,
        recovered: true,
        ...(usage === null ? {} : { usage: usageSums(usage) }),
        ...(opts.submitted === undefined ? {} : { submitted: opts.submitted }),
      },
      summary: {
        attemptId: opts.attemptId,
        state: "running",
        ...(opts.usage === undefined ? {} : { usage: formatUsage(opts.usage) }),
      },
      result: undefined,
    };
  });
  return { revision };
}

/**
 * A headless model step's submissions so far (protocol/submissions.ts): the worker reports the
 * attempt's whole tally after each verdict, before the model hears it, so a rejection is
 * durable even when the worker dies next. The tally is set, never added to: a retried report
 * cannot count twice. Event `node.submissions` carries the counts only (the message is read
 * with the attempt).
 */
import type { SubmissionTally } from "../../protocol/submissions.ts";
import { type Claim, claimRunId } from "../claims.ts";
import { protectedWrite, workerTarget, type WorkerWriteOptions } from "../protected-write.ts";
import { type StateStore } from "../store.ts";
import { executeArgs } from "../statements.ts";
import { expectState } from "./common.ts";
import { isLive, requireRunningAttempt } from "./node-attempts.ts";

export function recordNodeSubmissions(
  store: StateStore,
  claim: Claim,
  opts: { attemptId: string; tally: SubmissionTally } & WorkerWriteOptions,
): { revision: number } {
  const runId = claimRunId(claim);
  const { tally } = opts;
  const transition = "record the submissions of a node of";
  const { revision } = protectedWrite(store, claim, workerTarget(runId, opts), (tx) => {
    expectState(tx.run, transition, isLive);
    const changed = executeArgs(
      store,
      "UPDATE node_attempts SET submitted = ?1, rejected = ?2, last_rejection = ?3 " +
        "WHERE attempt_id = ?4 AND run_id = ?5 AND state = 'running'",
      tally.submitted,
      tally.rejected,
      tally.lastRejection ?? null,
      opts.attemptId,
      runId,
    );
    if (changed !== 1) requireRunningAttempt(tx, opts.attemptId, transition);
    return {
      type: "node.submissions",
      payload: { attemptId: opts.attemptId, rejected: tally.rejected, submitted: tally.submitted },
      summary: { attemptId: opts.attemptId, state: "running", rejected: tally.rejected },
      result: undefined,
    };
  });
  return { revision };
}

/**
 * An interactive submission's verdict, in the verdict's own transaction: one more submission
 * of the attempt, and a rejection's message.
 */
export function countVerdictInTx(
  store: StateStore,
  attemptId: string,
  rejection: string | null,
): void {
  executeArgs(
    store,
    "UPDATE node_attempts SET submitted = submitted + 1, rejected = rejected + ?1, " +
      "last_rejection = COALESCE(?2, last_rejection) WHERE attempt_id = ?3",
    rejection === null ? 0 : 1,
    rejection,
    attemptId,
  );
}

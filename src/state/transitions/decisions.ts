/**
 * Answering a checkpoint or human decision (`checkpoint.answer`, `decision.answer`, or a saved
 * default at the decision's deadline): `waiting/parked` -> `running/parked`. The waiting attempt
 * becomes `ok` with the answer as its output, so the next worker (new claim generation) routes
 * on from that durable boundary. Decision, resolution, attempt, run, queue, event, viewer delta
 * and command receipt commit in one transaction.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import { type CommandReceiptInput, recordHostCommandInTx } from "../host-commands.ts";
import { appendHistory, bumpRevision } from "../journal.ts";
import { execute, queryOne, type StateStore, writeTransaction } from "../store.ts";
import { NotFoundError, RevisionConflictError, TransitionError } from "../errors.ts";
import { encodeValue } from "../values.ts";
import { describeState, expectState, requireRun, setRunState } from "./common.ts";

export interface AnswerDecisionOptions {
  decisionId: string;
  /** The validated answer (the caller validated it against the decision's request). */
  answer: JsonValue;
  /** `answered` by a person or the model; `timeoutDefault` for the saved `onTimeout` default. */
  resolution?: "answered" | "timeoutDefault";
  expectedRevision?: number;
  receipt?: CommandReceiptInput;
}

/** Resolves a pending decision and makes its run launchable again (event `run.answered`). */
export function answerDecision(
  store: StateStore,
  opts: AnswerDecisionOptions,
): { runId: string; revision: number } {
  const answer = encodeValue("decision answer", opts.answer);
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const decision = queryOne<
      { run_id: string; attempt_id: string; node_id: string; state: string }
    >(
      store,
      "SELECT run_id, attempt_id, node_id, state FROM human_decisions " +
        "WHERE decision_id = :decisionId",
      { decisionId: opts.decisionId },
    );
    if (!decision) throw new NotFoundError("decision", opts.decisionId);
    const run = requireRun(store, decision.run_id);
    if (opts.expectedRevision !== undefined && opts.expectedRevision !== run.revision) {
      throw new RevisionConflictError(run.run_id, opts.expectedRevision, run.revision);
    }
    expectState(run, "answer", (r) => r.state === "waiting" && r.queue_state === "parked");
    if (decision.state !== "pending") {
      throw new TransitionError(
        run.run_id,
        "answer",
        describeState(run),
        `decision ${opts.decisionId} is already ${decision.state}`,
      );
    }
    const revision = bumpRevision(store, run.run_id, now);
    execute(
      store,
      "UPDATE human_decisions SET state = 'resolved', closed_at = :now " +
        "WHERE decision_id = :decisionId",
      { decisionId: opts.decisionId, now },
    );
    execute(
      store,
      "INSERT INTO human_decision_resolutions (decision_id, resolution, answer_json, " +
        "resolved_at) VALUES (:decisionId, :resolution, :answer, :now)",
      {
        decisionId: opts.decisionId,
        resolution: opts.resolution ?? "answered",
        answer,
        now,
      },
    );
    execute(
      store,
      "UPDATE node_attempts SET state = 'ok', output_json = :answer, finished_at = :now " +
        "WHERE attempt_id = :attemptId AND state = 'waiting'",
      { attemptId: decision.attempt_id, answer, now },
    );
    setRunState(store, run.run_id, "running");
    appendHistory(store, run.run_id, revision, now, {
      type: "run.answered",
      payload: {
        decisionId: opts.decisionId,
        nodeId: decision.node_id,
        resolution: opts.resolution ?? "answered",
      },
      summary: { state: "running", queue: "parked", nodeId: decision.node_id },
    });
    if (opts.receipt) {
      recordHostCommandInTx(store, opts.receipt, { runId: run.run_id, revision, now });
    }
    return { runId: run.run_id, revision };
  });
}

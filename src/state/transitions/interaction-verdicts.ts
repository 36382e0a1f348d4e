/**
 * How an interactive request ends or moves on, each in one transaction on the waiting run:
 *
 *   acceptSubmission     the validation child accepted: submission `accepted`, request `settled`,
 *                        attempt `ok` with the output, run `running/parked` (a new worker
 *                        generation routes on from that boundary)
 *   rejectSubmission     the child rejected (or died): submission `rejected` with the stored
 *                        actionable error; the request stays pending
 *   remindInteraction    the agent settled without submitting: count a reminder, or after the last
 *                        one fail the attempt (`noSubmission`) and make the run launchable
 *   timeOutInteraction   the attempt's durable deadline passed with no worker alive: one control
 *                        claim closes the request, the attempt becomes `timed_out`, the run
 *                        launchable (the next worker routes on `$result.outcome` or ends the run)
 */
import { fingerprint, type JsonValue } from "../../protocol/canonical-json.ts";
import type { OperationReceipt } from "../../protocol/host-operations.ts";
import type { FactError } from "../../protocol/run-facts.ts";
import { MAX_STEP_REMINDERS, noSubmissionError } from "../../protocol/step-contract-schema.ts";
import { boundedRejection } from "../../protocol/submissions.ts";
import type { StepUsage } from "../../protocol/step-usage.ts";
import { acquireClaimInTx, readLease, releaseLeaseInTx, runResource } from "../claims.ts";
import { RefusedError } from "../errors.ts";
import { readInteraction } from "../interaction-queries.ts";
import { appendHistory, nextRevision } from "../journal.ts";
import { type StateStore } from "../store.ts";
import { execute, queryOne } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { encodeValue } from "../values.ts";
import { boundedError, closeAttempt, setRunState } from "./common.ts";
import { countVerdictInTx } from "./node-submissions.ts";
import { recordStrandedTurnInTx } from "./turn-intents.ts";
import { closingUsage, setWaitingAttemptUsage } from "./interaction-usage.ts";
import {
  type InteractionTarget,
  requirePending,
  type WaitingChange,
  waitingRunWrite,
} from "./waiting-run-write.ts";

interface VerdictRow {
  request_id: string;
  run_id: string;
  attempt_id: string;
  node_id: string;
  status: string;
  run_state: string;
  queue_state: string;
}

/** The submission's request and run while the submission is still `validating`, else undefined. */
function validatingTarget(store: StateStore, submissionId: string): VerdictRow | undefined {
  return queryOne<VerdictRow>(
    store,
    "SELECT i.request_id, i.run_id, i.attempt_id, i.node_id, i.status, r.state AS run_state, " +
      "q.state AS queue_state FROM interactive_submissions s JOIN interactive_requests i " +
      "ON i.request_id = s.request_id JOIN runs r ON r.run_id = i.run_id JOIN run_queue q " +
      "ON q.run_id = i.run_id WHERE s.submission_id = :submissionId AND s.outcome = 'validating'",
    { submissionId },
  );
}

export interface VerdictOptions {
  submissionId: string;
  /**
   * The run claim generation the validation child was started under; a verdict from before a
   * control claim (a deadline) is stale and changes nothing.
   */
  generation: number;
}

/**
 * The submission's output was accepted. Returns the new revision, or null when the verdict is
 * stale (the submission is no longer validating, the request closed, the generation moved).
 */
export function acceptSubmission(
  store: StateStore,
  opts: VerdictOptions & { output: JsonValue },
): { runId: string; revision: number } | null {
  const output = encodeValue("node output", opts.output);
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const row = validatingTarget(store, opts.submissionId);
    if (!row || row.status !== "pending" || !fenced(store, row.run_id, opts.generation)) {
      return null;
    }
    if (row.run_state !== "waiting" || row.queue_state !== "parked") return null;
    const revision = nextRevision(store, row.run_id);
    const receiptHash = fingerprint({ submissionId: opts.submissionId, status: "accepted" });
    execute(
      store,
      "UPDATE interactive_submissions SET outcome = 'accepted', decided_at = :now, " +
        "receipt_hash = :hash WHERE submission_id = :id",
      { id: opts.submissionId, now, hash: receiptHash },
    );
    execute(
      store,
      "UPDATE interactive_requests SET status = 'settled', accepted_submission_id = :sub, " +
        "settled_at = :now WHERE request_id = :id",
      { id: row.request_id, sub: opts.submissionId, now },
    );
    execute(
      store,
      "UPDATE node_attempts SET state = 'ok', output_json = :output, finished_at = :now " +
        "WHERE attempt_id = :attemptId AND state = 'waiting'",
      { attemptId: row.attempt_id, output, now },
    );
    countVerdictInTx(store, row.attempt_id, null);
    setRunState(store, row.run_id, "running", now);
    appendHistory(store, row.run_id, revision, now, {
      type: "interaction.accepted",
      payload: {
        interactionId: row.request_id,
        submissionId: opts.submissionId,
        attemptId: row.attempt_id,
        nodeId: row.node_id,
        ...closingUsage(store, row.attempt_id),
      },
      summary: { state: "running", queue: "parked", nodeId: row.node_id, attempt: "ok" },
    });
    return { runId: row.run_id, revision };
  });
}

/**
 * The submission was rejected (by the node's rules, or because its child stopped): it keeps the
 * actionable error; the request stays pending for a corrected retry. Null when stale.
 */
export function rejectSubmission(
  store: StateStore,
  opts: VerdictOptions & { error: FactError },
): { runId: string; revision: number } | null {
  const error = boundedError(opts.error);
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const row = validatingTarget(store, opts.submissionId);
    if (!row) return null;
    const receiptHash = fingerprint({ submissionId: opts.submissionId, status: "rejected", error });
    execute(
      store,
      "UPDATE interactive_submissions SET outcome = 'rejected', decided_at = :now, " +
        "error_code = :code, error_message = :message, receipt_hash = :hash " +
        "WHERE submission_id = :id",
      { id: opts.submissionId, now, code: error.code, message: error.message, hash: receiptHash },
    );
    // A stale verdict still ends the provisional submission, but changes nothing else.
    if (row.status !== "pending" || !fenced(store, row.run_id, opts.generation)) return null;
    countVerdictInTx(store, row.attempt_id, boundedRejection(error.message));
    const revision = nextRevision(store, row.run_id);
    appendHistory(store, row.run_id, revision, now, {
      type: "interaction.rejected",
      payload: {
        interactionId: row.request_id,
        submissionId: opts.submissionId,
        code: error.code,
      },
      summary: { state: "waiting", nodeId: row.node_id, submission: "rejected" },
    });
    return { runId: row.run_id, revision };
  });
}

/** True while the run's claim generation is still `generation` (no control claim since). */
function fenced(store: StateStore, runId: string, generation: number): boolean {
  return (readLease(store, runResource(runId))?.generation ?? 1) === generation;
}

export interface RemindOptions extends InteractionTarget {
  /** The stored reminder count + 1. */
  reminder: number;
  /** The reminder text of count `n` (the receipt carries it). */
  reminderText(n: number): string;
  /** What the step used so far (interaction-usage.ts). */
  usage?: StepUsage;
}

type RemindReceipt = OperationReceipt<"interaction.remind">;

export type RemindResult =
  | { action: "remind"; reminder: number }
  | { action: "failed"; error: FactError }
  | { action: "wait" };

/**
 * The agent settled without submitting. While a submission validates: `wait` (nothing changes,
 * no receipt). Otherwise `reminder` must be the next count: up to MAX_STEP_REMINDERS it is
 * recorded (`interaction.reminded`); the one after fails the attempt `noSubmission`, closes the
 * request `failed` and makes the run launchable (a new worker routes on the failure).
 */
export function remindInteraction(
  store: StateStore,
  opts: RemindOptions,
): { revision: number; result: RemindResult; body: RemindReceipt } {
  const validating = (requestId: string) =>
    queryOne<{ n: number }>(
      store,
      "SELECT COUNT(*) AS n FROM interactive_submissions WHERE request_id = :requestId " +
        "AND outcome = 'validating'",
      { requestId },
    )!.n > 0;
  let waiting = false;
  return waitingRunWrite<RemindResult, RemindReceipt>(
    store,
    opts,
    (request) => {
      requirePending(request);
      waiting = validating(request.request_id);
      if (!waiting && opts.reminder !== request.reminders + 1) {
        throw new RefusedError(
          "conflict",
          "staleReminder",
          `Reminder ${opts.reminder} does not follow the ${request.reminders} already counted for step ${
            JSON.stringify(request.node_id)
          }`,
        );
      }
    },
    ({ now, request }): WaitingChange<RemindResult, RemindReceipt> => {
      // Nothing is counted and no receipt sticks to the key: the extension asks again later.
      if (waiting) {
        return {
          entry: null,
          result: { action: "wait" },
          receipt: false,
          body: { interactionId: request.request_id, action: "wait" },
        };
      }
      setWaitingAttemptUsage(store, request.attempt_id, opts.usage);
      if (opts.reminder <= MAX_STEP_REMINDERS) {
        execute(
          store,
          "UPDATE interactive_requests SET reminders = :n WHERE request_id = :id",
          { n: opts.reminder, id: request.request_id },
        );
        return {
          entry: {
            type: "interaction.reminded",
            payload: { interactionId: request.request_id, reminder: opts.reminder },
            summary: { state: "waiting", nodeId: request.node_id, reminder: opts.reminder },
          },
          result: { action: "remind", reminder: opts.reminder },
          body: {
            interactionId: request.request_id,
            action: "remind",
            reminder: opts.reminder,
            message: opts.reminderText(opts.reminder),
          },
        };
      }
      const error = noSubmissionError(
        { step: request.node_id },
        rejectedSoFar(store, request.attempt_id),
      );
      closeAttempt(store, request.attempt_id, "failed", now, error);
      execute(
        store,
        "UPDATE interactive_requests SET status = 'failed', reminders = :n, settled_at = :now " +
          "WHERE request_id = :id",
        { n: MAX_STEP_REMINDERS, id: request.request_id, now },
      );
      setRunState(store, request.run_id, "running", now);
      return {
        entry: {
          type: "interaction.failed",
          payload: {
            attemptId: request.attempt_id,
            code: error.code,
            interactionId: request.request_id,
            nodeId: request.node_id,
            ...closingUsage(store, request.attempt_id),
          },
          summary: {
            state: "running",
            queue: "parked",
            nodeId: request.node_id,
            attempt: "failed",
          },
        },
        result: { action: "failed", error },
        body: { interactionId: request.request_id, action: "failed", error },
      };
    },
  );
}

/** The attempt's rejected submissions so far and the last message (for `outputRejected`). */
function rejectedSoFar(store: StateStore, attemptId: string) {
  const row = queryOne<{ rejected: number; last_rejection: string | null }>(
    store,
    "SELECT rejected, last_rejection FROM node_attempts WHERE attempt_id = :attemptId",
    { attemptId },
  );
  return { count: row?.rejected ?? 0, last: row?.last_rejection ?? null };
}

/**
 * The attempt's durable deadline passed while the request waited (no worker alive). One control
 * claim (generation + 1, released in the same transaction) closes the request `timedOut`, rejects
 * a validating submission, records the attempt `timed_out` and makes the run launchable. Null
 * when the request is no longer pending or the deadline has not passed.
 */
export function timeOutInteraction(
  store: StateStore,
  opts: { interactionId: string; ownerId: string; ttlMs: number },
): { runId: string; revision: number } | null {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const request = readInteraction(store, opts.interactionId);
    if (!request || request.status !== "pending") return null;
    const attempt = queryOne<{ deadline_at: number | null; state: string }>(
      store,
      "SELECT deadline_at, state FROM node_attempts WHERE attempt_id = :id",
      { id: request.attempt_id },
    );
    if (attempt?.state !== "waiting" || attempt.deadline_at === null || attempt.deadline_at > now) {
      return null;
    }
    const control = acquireClaimInTx(store, {
      resource: runResource(request.run_id),
      runId: request.run_id,
      ownerType: "control",
      ownerId: opts.ownerId,
      ttlMs: opts.ttlMs,
    }, now);
    const revision = nextRevision(store, request.run_id);
    execute(
      store,
      "UPDATE interactive_submissions SET outcome = 'rejected', decided_at = :now, " +
        "error_code = 'nodeTimedOut', error_message = :message WHERE request_id = :id " +
        "AND outcome = 'validating'",
      { id: request.request_id, now, message: "The step reached its deadline" },
    );
    execute(
      store,
      "UPDATE interactive_requests SET status = 'timedOut', settled_at = :now " +
        "WHERE request_id = :id",
      { id: request.request_id, now },
    );
    // The model's turn on this step is stranded: the session is owed one successor turn.
    recordStrandedTurnInTx(store, request.run_id, "timedOut", request.attempt_id, now);
    closeAttempt(store, request.attempt_id, "timed_out", now, {
      code: "nodeTimedOut",
      message: `Step ${
        JSON.stringify(request.node_id)
      } reached its deadline before an output was accepted`,
    });
    setRunState(store, request.run_id, "running", now);
    releaseLeaseInTx(store, control.resource, now);
    appendHistory(store, request.run_id, revision, now, {
      type: "interaction.timedOut",
      payload: {
        interactionId: request.request_id,
        attemptId: request.attempt_id,
        generation: control.generation,
      },
      summary: {
        state: "running",
        queue: "parked",
        nodeId: request.node_id,
        attempt: "timed_out",
      },
    });
    return { runId: request.run_id, revision };
  });
}

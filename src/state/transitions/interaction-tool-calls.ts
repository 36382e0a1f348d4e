/**
 * The tool calls of a waiting step, checked against its step and attempt (the transport
 * contract) before anything commits:
 *
 *   submitInteraction        a submission: provisional `validating`, idempotent per tool-call id
 *   recordInteractionUpdate  an update of the waiting attempt (`node.update`)
 */
import { fingerprint, type JsonValue } from "../../protocol/canonical-json.ts";
import { checkSubmitTarget } from "../../protocol/step-contract-schema.ts";
import { RefusedError } from "../errors.ts";
import { findSubmissionByKey, type SubmissionRow } from "../interaction-queries.ts";
import { type StateStore } from "../store.ts";
import { execute, executeArgs, queryOne } from "../statements.ts";
import { encodeValue } from "../values.ts";
import {
  type InteractionTarget,
  requirePending,
  requireWaitingRun,
  waitingRunWrite,
} from "./waiting-run-write.ts";

export interface SubmitInteractionOptions extends InteractionTarget {
  nodeId: string;
  attemptId: string;
  /** The tool-call id: the same one always gets the same submission. */
  idempotencyKey: string;
  submission: JsonValue;
}

export type SubmitResult =
  | { kind: "new"; revision: number; submissionId: string }
  | { kind: "existing"; revision: number; submission: SubmissionRow };

/**
 * A tool submission. A tool-call id already used for this request returns that submission (the
 * same payload) or is refused (another payload). Otherwise the transport contract is checked
 * (pending, step, attempt, no other validation running) and a provisional `validating`
 * submission commits (`interaction.submitted`); the caller then starts its validation child.
 */
export function submitInteraction(
  store: StateStore,
  opts: SubmitInteractionOptions,
): SubmitResult {
  const payload = encodeValue("submission", opts.submission);
  const payloadHash = fingerprint({
    nodeId: opts.nodeId,
    attemptId: opts.attemptId,
    submission: opts.submission,
  });
  let earlier: SubmissionRow | undefined;
  const { revision, result } = waitingRunWrite(store, opts, (request) => {
    earlier = findSubmissionByKey(store, request.request_id, opts.idempotencyKey);
    if (earlier) {
      if (earlier.payload_hash !== payloadHash) {
        throw new RefusedError(
          "conflict",
          "idempotencyKeyReused",
          "This tool-call id already submitted another output for the step",
        );
      }
      return;
    }
    requirePending(request);
    const mismatch = checkSubmitTarget(
      { step: request.node_id, attempt: request.attempt_id },
      { step: opts.nodeId, attempt: opts.attemptId },
    );
    if (mismatch) throw new RefusedError("rejected", mismatch.code, mismatch.message);
  }, ({ now, request, run }) => {
    // The answer is read from the submission row; no second receipt for the same tool call.
    if (earlier) return { entry: null, result: earlier.submission_id, receipt: false };
    requireWaitingRun(run, "submit a step of");
    const validating = queryOne<{ submission_id: string }>(
      store,
      "SELECT submission_id FROM interactive_submissions WHERE request_id = :id " +
        "AND outcome = 'validating'",
      { id: request.request_id },
    );
    if (validating) {
      throw new RefusedError(
        "rejected",
        "validationPending",
        `Another submission of step ${
          JSON.stringify(request.node_id)
        } is being validated; wait for its result before submitting again`,
      );
    }
    const submissionId = store.ids.next("sub");
    execute(
      store,
      "INSERT INTO interactive_submissions (submission_id, request_id, idempotency_key, " +
        "payload_json, payload_hash, outcome, submitted_at) VALUES (:submissionId, :requestId, " +
        ":key, :payload, :hash, 'validating', :now)",
      {
        submissionId,
        requestId: request.request_id,
        key: opts.idempotencyKey,
        payload,
        hash: payloadHash,
        now,
      },
    );
    return {
      entry: {
        type: "interaction.submitted",
        payload: { interactionId: request.request_id, submissionId },
        summary: { state: "waiting", nodeId: request.node_id, submission: "validating" },
      },
      result: submissionId,
      body: { interactionId: request.request_id, submissionId, status: "validating" },
    };
  });
  if (earlier) return { kind: "existing", revision, submission: earlier };
  return { kind: "new", revision, submissionId: result };
}

export interface InteractionUpdateOptions extends InteractionTarget {
  nodeId: string;
  attemptId: string;
  type: string;
  key: string;
  data: JsonValue;
}

/** A tool update of the waiting attempt: the latest value per (run, type, key) (`node.update`). */
export function recordInteractionUpdate(
  store: StateStore,
  opts: InteractionUpdateOptions,
): { revision: number } {
  const data = encodeValue("node update", opts.data);
  const { revision } = waitingRunWrite(store, opts, (request, run) => {
    requirePending(request);
    const mismatch = checkSubmitTarget(
      { step: request.node_id, attempt: request.attempt_id },
      { step: opts.nodeId, attempt: opts.attemptId },
      "update",
    );
    if (mismatch) throw new RefusedError("rejected", mismatch.code, mismatch.message);
    requireWaitingRun(run, "update a step of");
  }, ({ now, request }) => {
    executeArgs(
      store,
      "INSERT INTO node_updates (run_id, type, key, attempt_id, data_json, count, updated_at) " +
        "VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6) ON CONFLICT (run_id, type, key) DO UPDATE SET " +
        "attempt_id = ?4, data_json = ?5, count = count + 1, updated_at = ?6",
      request.run_id,
      opts.type,
      opts.key,
      request.attempt_id,
      data,
      now,
    );
    return {
      entry: {
        type: "node.update",
        payload: { attemptId: request.attempt_id, type: opts.type, key: opts.key },
        summary: { state: "waiting", attemptId: request.attempt_id, update: opts.type },
      },
      result: undefined,
      body: { interactionId: request.request_id, status: "updated" },
    };
  });
  return { revision };
}

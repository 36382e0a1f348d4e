/**
 * The tool calls of a waiting step, checked against its step and attempt (the transport
 * contract) before anything commits:
 *
 *   submitInteraction        a submission: provisional `validating`, idempotent per tool-call id
 *   recordInteractionUpdate  an update of the waiting attempt (`node.update`)
 */
import { fingerprint, type JsonValue } from "../../protocol/canonical-json.ts";
import type { OperationReceipt } from "../../protocol/host-operations.ts";
import { checkSubmitTarget } from "../../protocol/step-contract-schema.ts";
import { RefusedError } from "../errors.ts";
import { findSubmissionByKey, readSubmission, type SubmissionRow } from "../interaction-queries.ts";
import { type StateStore } from "../store.ts";
import { execute, executeArgs, queryOne } from "../statements.ts";
import { encodeValue } from "../values.ts";
import type { StepUsage } from "../../protocol/step-usage.ts";
import { setWaitingAttemptUsage } from "./interaction-usage.ts";
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
  /**
   * The client whose stored receipts may name the submission this tool-call id attached to
   * (given also when the request id repeats, so no new receipt is written).
   */
  clientId?: string;
  submission: JsonValue;
  /** What the step used so far (interaction-usage.ts). */
  usage?: StepUsage;
  /**
   * The id of a new submission, when the host chose it already (one validated before it was
   * recorded: its verdict names it); a new id otherwise.
   */
  submissionId?: string;
}

export type SubmitResult =
  | { kind: "new"; revision: number; submissionId: string }
  | { kind: "existing"; revision: number; submission: SubmissionRow }
  /** Same output as the submission being validated: this call waits for that verdict. */
  | { kind: "attached"; revision: number; submission: SubmissionRow };

/**
 * A tool submission. A tool-call id already used for this request returns that submission (the
 * same payload) or is refused (another payload). Otherwise the transport contract is checked
 * (pending, step, attempt) and a provisional `validating` submission commits
 * (`interaction.submitted`); the caller then starts its validation child. While one validates,
 * a new tool call with the same output attaches to it (the model asked again for its verdict:
 * refusing it left the model no way to learn it) and its receipt names that submission, so the
 * same tool-call id keeps answering with it; another output is refused (`validationPending`).
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
  let attached: SubmissionRow | undefined;
  const { revision, result } = waitingRunWrite<
    string,
    OperationReceipt<"interaction.submit"> | null
  >(store, opts, (request) => {
    earlier = findSubmissionByKey(store, request.request_id, opts.idempotencyKey) ??
      attachedSubmission(store, request.request_id, opts);
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
    if (earlier) {
      return { entry: null, result: earlier.submission_id, receipt: false, body: null };
    }
    requireWaitingRun(run, "submit a step of");
    setWaitingAttemptUsage(store, request.attempt_id, opts.usage);
    const validating = queryOne<{ submission_id: string; payload_hash: string }>(
      store,
      "SELECT submission_id, payload_hash FROM interactive_submissions WHERE request_id = :id " +
        "AND outcome = 'validating'",
      { id: request.request_id },
    );
    if (validating?.payload_hash === payloadHash) {
      // No second row or validation: the receipt (this key's) points at the one validating.
      attached = readSubmission(store, validating.submission_id)!;
      return {
        entry: null,
        result: validating.submission_id,
        body: {
          interactionId: request.request_id,
          submissionId: validating.submission_id,
          status: "validating",
        },
      };
    }
    if (validating) {
      throw new RefusedError(
        "rejected",
        "validationPending",
        `Another output of step ${
          JSON.stringify(request.node_id)
        } is still being validated: call submit again with that same output to wait for its ` +
          "verdict; a different output can be submitted once that verdict is in",
      );
    }
    const submissionId = opts.submissionId ?? store.ids.next("sub");
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
  if (attached) return { kind: "attached", revision, submission: attached };
  return { kind: "new", revision, submissionId: result };
}

/**
 * The submission an earlier call with this tool-call id attached to (its receipt names it), so
 * a repeated call answers with that verdict even once it is decided.
 */
function attachedSubmission(
  store: StateStore,
  requestId: string,
  opts: SubmitInteractionOptions,
): SubmissionRow | undefined {
  const clientId = opts.clientId ?? opts.receipt?.clientId;
  if (clientId === undefined) return undefined;
  const stored = queryOne<{ submission_id: string }>(
    store,
    "SELECT json_extract(receipt_json, '$.submissionId') AS submission_id FROM host_commands " +
      "WHERE client_id = :clientId AND operation = :operation AND idempotency_key = :key " +
      "AND json_extract(receipt_json, '$.interactionId') = :requestId " +
      "AND json_extract(receipt_json, '$.submissionId') IS NOT NULL " +
      "ORDER BY created_at, request_id LIMIT 1",
    {
      clientId,
      operation: "interaction.submit",
      key: opts.idempotencyKey,
      requestId,
    },
  );
  return stored ? readSubmission(store, stored.submission_id) : undefined;
}

export interface InteractionUpdateOptions extends InteractionTarget {
  nodeId: string;
  attemptId: string;
  type: string;
  key: string;
  data: JsonValue;
  /** What the step used so far (interaction-usage.ts). */
  usage?: StepUsage;
}

/** A tool update of the waiting attempt: the latest value per (run, type, key) (`node.update`). */
export function recordInteractionUpdate(
  store: StateStore,
  opts: InteractionUpdateOptions,
): { revision: number } {
  const data = encodeValue("node update", opts.data);
  const { revision } = waitingRunWrite<
    undefined,
    OperationReceipt<"interaction.update">
  >(store, opts, (request, run) => {
    requirePending(request);
    const mismatch = checkSubmitTarget(
      { step: request.node_id, attempt: request.attempt_id },
      { step: opts.nodeId, attempt: opts.attemptId },
      "update",
    );
    if (mismatch) throw new RefusedError("rejected", mismatch.code, mismatch.message);
    requireWaitingRun(run, "update a step of");
  }, ({ now, request }) => {
    setWaitingAttemptUsage(store, request.attempt_id, opts.usage);
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

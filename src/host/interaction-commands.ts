/**
 * The Pi session's interactive-step operations. Each checks the request's transport contract in
 * its transaction (the run, the session, the step and attempt, pending) and answers only after
 * the commit:
 *
 *   interaction.claim    the session's current request (read; records the first claim time)
 *   interaction.present  compare-and-set of the presentation's session entry id (receipt)
 *   interaction.submit   provisional `validating` submission (after the step's presentation,
 *                        in the same commit, when it carries one), then the validation child
 *                        (a prepared process gets its request before that COMMIT);
 *                        the answer waits (bounded) for the verdict. Idempotent by tool-call id
 *                        per request: the same id always gets that submission's receipt
 *   interaction.update   a progress update, rate limited like worker updates (receipt)
 *   interaction.remind   the agent settled without submitting: a reminder or the failure (receipt)
 *   session.wait         a long poll on the session's cursor (the push to connected sessions)
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import {
  type HostRequest,
  type OperationRequest,
  requestFingerprint,
  requestFor,
} from "../protocol/host-request.ts";
import type { OperationReceipt } from "../protocol/host-operations.ts";
import { failureResponse, type HostResponse, receiptResponse } from "../protocol/host-response.ts";
import { HOST_ERROR_CODES } from "../protocol/host-response.ts";
import type { StepContract } from "../protocol/step-contract-schema.ts";
import { type CommandReceiptInput, findHostCommand } from "../state/host-commands.ts";
import {
  readInteraction,
  readSubmission,
  runHeadsForStep,
  sessionCursor,
  type SessionInteraction,
  sessionReservation,
  type SubmissionRow,
} from "../state/interaction-queries.ts";
import { readRunRow } from "../state/protected-write.ts";
import { claimInteraction, claimInteractionLater } from "../state/transitions/interactions.ts";
import { presentInteraction } from "../state/transitions/interaction-presentation.ts";
import {
  recordInteractionUpdate,
  type SubmitInteractionOptions,
} from "../state/transitions/interaction-tool-calls.ts";
import { remindInteraction } from "../state/transitions/interaction-verdicts.ts";
import { RefusedError } from "../state/errors.ts";
import { decodeValue } from "../state/values.ts";
import { checkUpdate, UPDATE_LIMITS } from "../workflows/updates.ts";
import { takeToken } from "./update-rate-limit.ts";
import { acceptedText, rejectedText, reminderMessage } from "../workflows/step-contract.ts";
import {
  HELD_SUBMISSION_MS,
  heldSubmissionOf,
  recordHeldAlone,
  submitOrHold,
} from "./held-submission.ts";
import { withReceipt } from "./command-receipts.ts";
import { traceMark } from "../state/transactions.ts";
import { logError } from "./host-log.ts";
import type { HostRuntime } from "./host-runtime.ts";

/** `interaction.claim`: the session's oldest pending request, or null. */
export function claimInteractionQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  const claim = requestFor(request, "interaction.claim");
  const current = claimInteraction(rt.store, claim.payload.sessionId);
  return receiptResponse(claim, rt.epoch, {
    interaction: current ? claimView(current) : null,
    waiting: current?.waiting ?? 0,
    activeRun: sessionReservation(rt.store, claim.payload.sessionId) ?? null,
  });
}

/** One pending request as `interaction.claim` (and a submit's `next`) returns it. */
type ClaimedInteraction = NonNullable<OperationReceipt<"interaction.claim">["interaction"]>;

function claimView(current: SessionInteraction): ClaimedInteraction {
  const r = current.request;
  const s = current.submission;
  return {
    interactionId: r.request_id,
    runId: r.run_id,
    expectedRevision: current.revision,
    kind: r.kind,
    contract: storedContract(r.contract_json),
    presentation: {
      sessionEntryId: r.presentation_entry_id,
      claimedAt: r.claimed_at ?? r.created_at,
      presentedAt: r.presented_at,
    },
    reminders: r.reminders,
    submission: s && s.outcome !== "accepted"
      ? { submissionId: s.submission_id, status: s.outcome, ...errorOf(s) }
      : null,
    createdAt: r.created_at,
  };
}

function errorOf(s: SubmissionRow): { error?: { code: string; message: string } } {
  return s.error_code === null
    ? {}
    : { error: { code: s.error_code, message: s.error_message ?? "" } };
}

/** `interaction.present`: record (or adopt) the session entry that shows the step. */
export function presentInteractionCommand(
  rt: HostRuntime,
  request: HostRequest,
): Promise<HostResponse> {
  return withReceipt(rt, request, (rt, request, receipt) => {
    const presentRequest = requestFor(request, "interaction.present");
    const { payload, runId } = presentRequest;
    const { revision, result } = presentInteraction(rt.store, {
      runId: runId!,
      interactionId: payload.interactionId,
      sessionId: payload.sessionId,
      sessionEntryId: payload.sessionEntryId,
      replaces: payload.replaces,
      expectedRevision: request.expectedRevision,
      receipt,
    });
    return answer(rt, presentRequest, revision, result);
  });
}

/** `interaction.update`: a tool update of the pending step, checked and rate limited. */
export function updateInteractionCommand(
  rt: HostRuntime,
  request: HostRequest,
): Promise<HostResponse> {
  return withReceipt(rt, request, (rt, request, receipt) => {
    const updateRequest = requestFor(request, "interaction.update");
    const { payload, runId } = updateRequest;
    const update = payload.update;
    let checked: { type: string; key: string; data: JsonValue };
    try {
      checked = checkUpdate({ type: update.type, key: update.key ?? "main", data: update.data });
    } catch (error) {
      throw new RefusedError("rejected", "invalidUpdate", (error as Error).message);
    }
    if (!takeToken(rt, payload.interactionId)) {
      throw new RefusedError(
        "rejected",
        "rateLimited",
        `Update rejected: rate limit of ${UPDATE_LIMITS.ratePerSecond} per second (burst ${UPDATE_LIMITS.burst}) exceeded`,
      );
    }
    const { revision } = recordInteractionUpdate(rt.store, {
      runId: runId!,
      interactionId: payload.interactionId,
      sessionId: payload.sessionId,
      nodeId: payload.nodeId,
      attemptId: payload.attemptId,
      ...checked,
      usage: payload.usage,
      expectedRevision: request.expectedRevision,
      receipt,
    });
    return answer(rt, updateRequest, revision, {
      interactionId: payload.interactionId,
      status: "updated",
    });
  });
}

/** `interaction.remind`: the agent settled without submitting. */
export function remindInteractionCommand(
  rt: HostRuntime,
  request: HostRequest,
): Promise<HostResponse> {
  // A submission held while it validates is recorded first: the reminder then waits for it.
  const held = heldSubmissionOf(
    rt.store,
    requestFor(request, "interaction.remind").payload.interactionId,
  );
  if (held) recordHeldAlone(rt.store, held);
  return withReceipt(rt, request, (rt, request, receipt) => {
    const remindRequest = requestFor(request, "interaction.remind");
    const { payload, runId } = remindRequest;
    const contract = contractOf(rt, payload.interactionId);
    const { revision, result, body } = remindInteraction(rt.store, {
      runId: runId!,
      interactionId: payload.interactionId,
      sessionId: payload.sessionId,
      reminder: payload.reminder,
      reminderText: (n) => contract ? reminderMessage(contract, n) : "",
      usage: payload.usage,
      expectedRevision: request.expectedRevision,
      receipt,
    });
    if (result.action === "failed") rt.supervision.wake();
    return answer(rt, remindRequest, revision, body);
  });
}

/**
 * `interaction.submit`. Not through the generic receipts: a submission's receipt changes from
 * `validating` to its verdict, so the answer is always read from the submission row. The request
 * id still has its host_commands row (a reused id with another payload is a conflict).
 */
export async function submitInteractionCommand(
  rt: HostRuntime,
  request: HostRequest,
): Promise<HostResponse> {
  const { payload, runId, idempotencyKey } = requestFor(request, "interaction.submit");
  traceMark(rt.store, "submit");
  const fail = (outcome: "rejected" | "conflict", code: string, message: string) =>
    failureResponse({ requestId: request.requestId, hostEpoch: rt.epoch, outcome, code, message });
  if (idempotencyKey === undefined) {
    return fail(
      "rejected",
      HOST_ERROR_CODES.invalidRequest,
      "interaction.submit needs the tool-call id as its idempotencyKey",
    );
  }
  const waitUntil = performance.now() + payload.waitMs;
  const waitLeft = () => Math.max(0, Math.floor(waitUntil - performance.now()));
  // A submission that came before the run's epoch said goodbye (its step was committed with the
  // last acceptance): wait for that, bounded, before anything is written, so that its process,
  // once kept, validates it held (one commit) rather than after a commit of its own. A resend
  // answered from its stored receipt waits for nothing.
  const goodbye = rt.supervision.goodbyeOf(runId!);
  if (goodbye && !findHostCommand(rt.store, request.requestId)) {
    await rt.sessions.until(goodbye, Math.min(HELD_SUBMISSION_MS, waitLeft()));
  }
  // A submission of this step held while it validates (held-submission.ts) is recorded now, so
  // this call (the same tool call again, or another) is answered from the rows as before: it
  // joins that validation, never starts a second one.
  const heldBefore = heldSubmissionOf(rt.store, payload.interactionId);
  if (heldBefore) recordHeldAlone(rt.store, heldBefore);
  const fingerprint = requestFingerprint(request);
  const stored = findHostCommand(rt.store, request.requestId);
  if (stored && stored.requestFingerprint !== fingerprint) {
    return fail(
      "conflict",
      HOST_ERROR_CODES.requestIdReused,
      "Request id reused with another payload: use a new request id for a new command",
    );
  }
  const receipt: CommandReceiptInput | undefined = stored ? undefined : {
    requestId: request.requestId,
    clientId: request.clientId,
    operation: request.operation,
    idempotencyKey,
    requestFingerprint: fingerprint,
  };
  const opts: SubmitInteractionOptions = {
    runId: runId!,
    interactionId: payload.interactionId,
    sessionId: payload.sessionId,
    nodeId: payload.nodeId,
    attemptId: payload.attemptId,
    idempotencyKey,
    clientId: request.clientId,
    submission: payload.submission,
    usage: payload.usage,
    expectedRevision: request.expectedRevision,
    receipt,
  };
  const holding = submitOrHold(
    rt.store,
    (submissionId, held) => rt.supervision.validateNow(submissionId, held),
    opts,
    payload.presentation,
  );
  let submissionId: string;
  let isNew = true;
  let adopted = false;
  if ("held" in holding) {
    const { held, decided } = holding;
    submissionId = held.submissionId;
    await rt.sessions.until(
      Promise.race([decided, held.settled]),
      Math.min(HELD_SUBMISSION_MS, waitLeft()),
    );
    // Late, or its exchange ended without a verdict: recorded `validating` like any other.
    recordHeldAlone(rt.store, held);
    if (held.refused) throw held.refused;
  } else {
    const { result } = holding;
    submissionId = result.kind === "new" ? result.submissionId : result.submission.submission_id;
    isNew = result.kind === "new";
    adopted = result.kind === "existing" && !stored;
  }
  let row = readSubmission(rt.store, submissionId)!;
  // Said once for every submission, also one held and decided at once.
  if (row.outcome === "validating" || "held" in holding) {
    rt.log("interaction.submitted", { runId: runId!, again: !isNew });
  }
  if (row.outcome === "validating") {
    // Joins the child when one runs (a repeated tool call polls), starts one otherwise.
    await rt.sessions.until(rt.supervision.validateSubmission(submissionId), waitLeft());
    row = readSubmission(rt.store, submissionId) ?? row;
  }
  const next = row.outcome === "accepted" && payload.nextWaitMs > 0
    ? await nextSessionStep(rt, payload.sessionId, runId!, payload.nextWaitMs)
    : {};
  // The step and attempt the transport check matched exactly (a repeated tool call: by its
  // payload's hash), so the stored contract is not read again for the tool result's text.
  const target = { step: payload.nodeId, attempt: payload.attemptId };
  const body: OperationReceipt<"interaction.submit"> = {
    interactionId: payload.interactionId,
    submissionId,
    status: row.outcome,
    ...errorOf(row),
    ...next,
    message: row.outcome === "accepted"
      ? acceptedText(target, "next" in next && next.next !== null)
      : row.outcome === "rejected"
      ? rejectedText(target, row.error_message ?? "Output rejected")
      : "The output is still being validated: call submit again with the same output to wait for its verdict",
  };
  const response = receiptResponse(request, rt.epoch, body, {
    revision: readRunRow(rt.store, runId!)?.revision,
    adopted,
  });
  // Bench hook: the accepted submit's answer, written next (the step's end of the host's share).
  if (row.outcome === "accepted") traceMark(rt.store, "answer");
  return response;
}

/**
 * After an accepted submission: the session's next pending request (claimed), once the run
 * commits it within `waitMs`, with the session's cursor read before that claim; null as soon as
 * the run goes elsewhere (ends, waits on something else, is paused or blocked, runs another kind
 * of node), when the time is up, or when the host stops. The cursor is read before each check,
 * so a commit between the check and the wait wakes it at once.
 */
async function nextSessionStep(
  rt: HostRuntime,
  sessionId: string,
  runId: string,
  waitMs: number,
): Promise<{ next: ClaimedInteraction; cursor: number } | { next: null }> {
  const deadline = performance.now() + waitMs;
  for (;;) {
    const cursor = sessionCursor(rt.store, sessionId);
    // The claim time is committed after the answer left: no commit between the next request's
    // and the model's next step.
    const claimed = claimInteractionLater(rt.store, sessionId);
    if (claimed.current) {
      setImmediate(() => {
        try {
          claimed.record();
        } catch (error) {
          rt.log("interaction.claim_record_failed", { error: logError(error) });
        }
      });
      return { next: claimView(claimed.current), cursor };
    }
    const left = Math.floor(deadline - performance.now());
    if (left <= 0 || !runHeadsForStep(rt.store, runId)) return { next: null };
    const { changed } = await rt.sessions.wait(sessionId, cursor, left);
    if (!changed) return { next: null };
  }
}

/** `session.wait`: answers once the session's runs changed after `cursor`, or after `waitMs`. */
export async function sessionWaitQuery(
  rt: HostRuntime,
  request: HostRequest,
): Promise<HostResponse> {
  const { payload } = requestFor(request, "session.wait");
  const { cursor, changed } = await rt.sessions.wait(
    payload.sessionId,
    payload.cursor,
    payload.waitMs,
  );
  return receiptResponse(request, rt.epoch, {
    cursor,
    changed,
    activeRun: sessionReservation(rt.store, payload.sessionId) ?? null,
  });
}

function contractOf(rt: HostRuntime, interactionId: string): StepContract | undefined {
  const row = readInteraction(rt.store, interactionId);
  return row ? storedContract(row.contract_json) : undefined;
}

/** A stored step contract: the host checked it against its schema before it stored it. */
function storedContract(json: string): StepContract {
  return decodeValue(json) as unknown as StepContract;
}

/**
 * The answer of a command whose receipt the state transition built and stored with its change
 * (present, remind: JSON in `host_commands`) or the host built (update).
 */
function answer<Op extends "interaction.present" | "interaction.update" | "interaction.remind">(
  rt: HostRuntime,
  request: OperationRequest<Op>,
  revision: number,
  body: OperationReceipt<Op>,
): HostResponse {
  return receiptResponse(request, rt.epoch, body, { revision });
}

/**
 * Interactive requests: an origin-session model step waits for the Pi session with no worker.
 *
 *   requestInteraction   worker (`interaction.requested`, under its claim): `running/running` ->
 *                        `waiting/parked`, the attempt `waiting`, a pending request, claim released
 *   claimInteraction     the session's current request (oldest pending); records `claimed_at`
 *   presentInteraction   compare-and-set of the presentation's public session entry id
 *   submitInteraction    a tool submission after the transport check: provisional `validating`
 *   recordInteractionUpdate  a tool update on the waiting attempt
 *
 * Verdicts, reminders and deadlines are in interaction-verdicts.ts. None of these needs a run
 * claim: the run waits unclaimed, and each write first proves no live claim exists.
 */
import { fingerprint, type JsonValue } from "../../protocol/canonical-json.ts";
import { checkSubmitTarget } from "../../protocol/step-contract-schema.ts";
import {
  type Claim,
  claimRunId,
  protectedWrite,
  releaseLeaseInTx,
  runResource,
  type RunRow,
  workerTarget as target,
  type WorkerWriteOptions,
} from "../claims.ts";
import { InteractionRefusedError, RevisionConflictError, TransitionError } from "../errors.ts";
import { type CommandReceiptInput, recordHostCommandInTx } from "../host-commands.ts";
import {
  currentSessionInteraction,
  findSubmissionByKey,
  type InteractionRow,
  readInteraction,
  type SessionInteraction,
  type SubmissionRow,
} from "../interaction-queries.ts";
import { appendHistory, bumpRevision, type JournalEntry } from "../journal.ts";
import { execute, executeArgs, queryOne, type StateStore, writeTransaction } from "../store.ts";
import { encodeValue } from "../values.ts";
import { takeAuthorityInTx } from "./control-claim.ts";
import { describeState, expectState, requireRun, setQueueState, setRunState } from "./common.ts";
import { resolvePromptedIntentsInTx } from "./turn-intents.ts";

export interface RequestInteractionOptions extends WorkerWriteOptions {
  attemptId: string;
  nodeId: string;
  kind: "agent" | "assistantMessage";
  /** The step contract (validated by the caller); stored for the session to present. */
  contract: JsonValue;
  /** Must equal the attempt's committed deadline. */
  deadlineAt: number | null;
}

/** `running/running` -> `waiting/parked` with a pending interactive request (event `run.waiting`). */
export function requestInteraction(
  store: StateStore,
  claim: Claim,
  opts: RequestInteractionOptions,
): { revision: number; interactionId: string; sessionId: string } {
  const runId = claimRunId(claim);
  const contract = encodeValue("step contract", opts.contract);
  const { revision, result } = protectedWrite(store, claim, target(runId, opts), (tx) => {
    expectState(tx.run, "wait", (r) => r.state === "running" && r.queue_state === "running");
    const attempt = queryOne<
      { run_id: string; state: string; node_id: string; deadline_at: number | null }
    >(
      store,
      "SELECT run_id, state, node_id, deadline_at FROM node_attempts WHERE attempt_id = :attemptId",
      { attemptId: opts.attemptId },
    );
    const refuse = (detail: string) =>
      new TransitionError(runId, "request an interaction for", describeState(tx.run), detail);
    if (
      !attempt || attempt.run_id !== runId || attempt.state !== "running" ||
      attempt.node_id !== opts.nodeId
    ) {
      throw refuse(`attempt ${opts.attemptId} is not the running attempt of node ${opts.nodeId}`);
    }
    if (attempt.deadline_at !== opts.deadlineAt) {
      throw refuse("the deadline differs from the one committed with node.started");
    }
    const binding = queryOne<{ execution_mode: string; origin_session_id: string | null }>(
      store,
      "SELECT execution_mode, origin_session_id FROM run_bindings WHERE run_id = :runId",
      { runId },
    );
    if (binding?.execution_mode !== "interactive" || !binding.origin_session_id) {
      throw refuse("the run has no origin Pi session (it is not interactive)");
    }
    const interactionId = store.ids.next("ir");
    execute(
      store,
      "UPDATE node_attempts SET state = 'waiting' WHERE attempt_id = :attemptId",
      { attemptId: opts.attemptId },
    );
    execute(
      store,
      "INSERT INTO interactive_requests (request_id, run_id, attempt_id, node_id, " +
        "target_session_id, kind, contract_json, contract_hash, status, created_at) VALUES " +
        "(:interactionId, :runId, :attemptId, :nodeId, :sessionId, :kind, :contract, :hash, " +
        "'pending', :now)",
      {
        interactionId,
        runId,
        attemptId: opts.attemptId,
        nodeId: opts.nodeId,
        sessionId: binding.origin_session_id,
        kind: opts.kind,
        contract,
        hash: fingerprint(opts.contract),
        now: tx.now,
      },
    );
    setRunState(store, runId, "waiting");
    setQueueState(store, runId, "parked", tx.now);
    releaseLeaseInTx(store, claim.resource, tx.now);
    // This step's prompt is the successor of a turn the run stranded earlier.
    resolvePromptedIntentsInTx(store, runId, tx.now);
    return {
      type: "run.waiting",
      payload: { interactionId, nodeId: opts.nodeId, kind: opts.kind },
      summary: { state: "waiting", nodeId: opts.nodeId, kind: opts.kind },
      result: { interactionId, sessionId: binding.origin_session_id },
    };
  });
  return { revision, ...result };
}

/**
 * The session's current request (see `currentSessionInteraction`); the first claim records
 * `claimed_at` (idempotent: later claims change nothing).
 */
export function claimInteraction(
  store: StateStore,
  sessionId: string,
): SessionInteraction | undefined {
  const current = currentSessionInteraction(store, sessionId);
  if (!current || current.request.claimed_at !== null) return current;
  return writeTransaction(store, () => {
    const now = store.clock.now();
    execute(
      store,
      "UPDATE interactive_requests SET claimed_at = :now WHERE request_id = :id " +
        "AND claimed_at IS NULL",
      { id: current.request.request_id, now },
    );
    return currentSessionInteraction(store, sessionId);
  });
}

/** What a session operation names: run, request, session (and for tool calls step and attempt). */
export interface InteractionTarget {
  runId: string;
  interactionId: string;
  sessionId: string;
  expectedRevision?: number;
  receipt?: CommandReceiptInput;
}

/** What a `waitingRunWrite` change commits (a null entry: no run change). */
export interface WaitingChange<T> {
  entry: JournalEntry | null;
  result: T;
  /** Store the command receipt (default true): false for an answer that must not stick. */
  receipt?: boolean;
  /** The receipt body stored with the command (unless the caller gave one). */
  body?: JsonValue;
}

/**
 * One write on a waiting run that no worker holds: the run row, the request's transport checks,
 * proof that no live claim exists (an expired one is replaced by a control claim and released),
 * the change, its revision, event and viewer delta, and the command receipt. Returns the
 * change's result; a change with a null `entry` commits nothing but the receipt.
 */
export function waitingRunWrite<T>(
  store: StateStore,
  t: InteractionTarget,
  check: (request: InteractionRow, run: RunRow) => void,
  change: (ctx: { now: number; request: InteractionRow; run: RunRow }) => WaitingChange<T>,
): { revision: number; result: T; body: JsonValue } {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const request = requireRequest(store, t);
    const run = requireRun(store, t.runId);
    check(request, run);
    if (t.expectedRevision !== undefined && t.expectedRevision !== run.revision) {
      throw new RevisionConflictError(t.runId, t.expectedRevision, run.revision);
    }
    const applied = change({ now, request, run });
    let revision = run.revision;
    if (applied.entry) {
      const authority = takeAuthorityInTx(store, t.runId, null, now);
      revision = bumpRevision(store, t.runId, now);
      if (authority !== "none") releaseLeaseInTx(store, runResource(t.runId), now);
      appendHistory(store, t.runId, revision, now, applied.entry);
    }
    if (t.receipt && applied.receipt !== false) {
      recordHostCommandInTx(
        store,
        { ...t.receipt, receipt: t.receipt.receipt ?? applied.body ?? {} },
        { runId: t.runId, revision, now },
      );
    }
    return { revision, result: applied.result, body: applied.body ?? null };
  });
}

/** The request named by `t`, checked against its run and session. */
function requireRequest(store: StateStore, t: InteractionTarget): InteractionRow {
  const request = readInteraction(store, t.interactionId);
  if (!request || request.run_id !== t.runId) {
    throw new InteractionRefusedError(
      "notFound",
      "interactionNotFound",
      `Unknown interactive request ${t.interactionId} of run ${t.runId}`,
    );
  }
  if (request.target_session_id !== t.sessionId) {
    throw new InteractionRefusedError(
      "rejected",
      "wrongSession",
      `Interactive request ${t.interactionId} belongs to another Pi session than this one`,
    );
  }
  return request;
}

/** Refuses a request that no longer waits (settled, timed out, failed, cancelled). */
export function requirePending(request: InteractionRow): void {
  if (request.status === "pending") return;
  const why = {
    settled: "its output was already accepted",
    timedOut: "it reached its deadline",
    failed: "it failed after the reminders",
    cancelled: "its run was cancelled or ended",
    pending: "",
  }[request.status];
  throw new InteractionRefusedError(
    "rejected",
    "notPending",
    `Step ${JSON.stringify(request.node_id)} is no longer waiting for a submission: ${why}`,
  );
}

/** The waiting run of a pending request (its state must agree). */
function requireWaitingRun(run: RunRow, transition: string): void {
  expectState(run, transition, (r) => r.state === "waiting" && r.queue_state === "parked");
}

export interface PresentInteractionOptions extends InteractionTarget {
  sessionEntryId: string;
  /** The stored entry id this one replaces (null: none was recorded yet). */
  replaces?: string | null;
}

/**
 * Records the public session entry id of the message presenting the request
 * (`interaction.presented`). Compare-and-set: the stored id must equal `replaces` (null when none
 * yet); an equal id is idempotent (nothing changes). Only the session's current request.
 */
export function presentInteraction(
  store: StateStore,
  opts: PresentInteractionOptions,
): {
  revision: number;
  result: { interactionId: string; sessionEntryId: string; presentedAt: number };
  body: JsonValue;
} {
  return waitingRunWrite(store, opts, (request, run) => {
    requirePending(request);
    requireWaitingRun(run, "present a step of");
    const current = currentSessionInteraction(store, opts.sessionId);
    if (current?.request.request_id !== request.request_id) {
      throw new InteractionRefusedError(
        "rejected",
        "notCurrent",
        `Interactive request ${request.request_id} is not this session's current step; present ${
          current?.request.request_id ?? "nothing"
        } first`,
      );
    }
  }, ({ now, request }) => {
    const stored = request.presentation_entry_id;
    const body = (entryId: string, at: number) => ({
      interactionId: request.request_id,
      sessionEntryId: entryId,
      presentedAt: at,
    });
    if (stored === opts.sessionEntryId) {
      const at = request.presented_at ?? now;
      return { entry: null, result: body(stored, at), body: body(stored, at) };
    }
    if (stored !== (opts.replaces ?? null)) {
      throw new InteractionRefusedError(
        "conflict",
        "presentationConflict",
        `Step already presented as session entry ${stored}: adopt it, or pass replaces: ${
          JSON.stringify(stored)
        } to present it again`,
      );
    }
    execute(
      store,
      "UPDATE interactive_requests SET presentation_entry_id = :entry, presented_at = :now, " +
        "claimed_at = COALESCE(claimed_at, :now) WHERE request_id = :id",
      { entry: opts.sessionEntryId, now, id: request.request_id },
    );
    return {
      entry: {
        type: "interaction.presented",
        payload: { interactionId: request.request_id, replaced: stored !== null },
        summary: { state: "waiting", nodeId: request.node_id, presented: true },
      },
      result: body(opts.sessionEntryId, now),
      body: body(opts.sessionEntryId, now),
    };
  });
}

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
        throw new InteractionRefusedError(
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
    if (mismatch) throw new InteractionRefusedError("rejected", mismatch.code, mismatch.message);
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
      throw new InteractionRefusedError(
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
    if (mismatch) throw new InteractionRefusedError("rejected", mismatch.code, mismatch.message);
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

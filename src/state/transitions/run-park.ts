/**
 * A live run stops at a durable boundary without a worker: waiting for a person
 * (`waiting/parked`), parked (`running/parked`), or blocked until an operator resumes it.
 * Each releases the run claim in the same transaction.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import { type Claim, claimRunId, releaseLeaseInTx } from "../claims.ts";
import {
  protectedWrite,
  workerTarget as target,
  type WorkerWriteOptions,
} from "../protected-write.ts";
import { TransitionError } from "../errors.ts";
import { appendHistory, nextRevision } from "../journal.ts";
import { type StateStore } from "../store.ts";
import { execute, queryOne } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { encodeValue } from "../values.ts";
import { takeAuthorityInTx } from "./control-claim.ts";
import {
  type BlockedReason,
  closeAttempt,
  describeState,
  expectState,
  openAttempt,
  requireRun,
  setQueueState,
  setRunState,
  stopAtBoundary,
} from "./common.ts";
import { presentWaitingInTx, releaseTurnIntentsInTx } from "./turn-intents.ts";
import type { WaitingPresentation } from "../../protocol/waiting-presentation.ts";

const isActive = (r: { state: string; queue_state: string }) =>
  r.state === "running" && (r.queue_state === "running" || r.queue_state === "starting");

export interface WaitRunOptions extends WorkerWriteOptions {
  /** The running attempt of the checkpoint or decision node; it becomes `waiting`. */
  attemptId: string;
  nodeId: string;
  kind: "checkpoint" | "humanDecision";
  /** The validated request shown to the person (prompt, options, default). */
  request: JsonValue;
  /** A checkpoint's declared answer shape, checked before an answer is recorded. */
  answerSchema?: JsonValue;
  /** A human decision's saved default: recorded `afterMs` after this commit unless answered. */
  timeoutDefault?: { afterMs: number; response: JsonValue } | null;
  /** A checkpoint's presentation (the root's `presentationPrompt`): one turn for this wait. */
  presentation?: WaitingPresentation;
}

/**
 * `running/running` -> `waiting/parked` with a pending `human_decisions` row. The attempt keeps
 * the deadline `node.started` resolved (the author's `timeoutMs`, or none); a decision's default
 * gets its own deadline. The host deadline timer enforces both while no worker runs.
 */
export function waitRun(
  store: StateStore,
  claim: Claim,
  opts: WaitRunOptions,
): { revision: number; decisionId: string } {
  const runId = claimRunId(claim);
  const request = encodeValue("decision request", opts.request);
  const answerSchema = opts.answerSchema === undefined
    ? null
    : encodeValue("answer schema", opts.answerSchema);
  const defaultAnswer = opts.timeoutDefault
    ? encodeValue("decision default", opts.timeoutDefault.response)
    : null;
  const { revision, result } = protectedWrite(store, claim, target(runId, opts), (tx) => {
    expectState(tx.run, "wait", (r) => r.state === "running" && r.queue_state === "running");
    const attempt = queryOne<{ run_id: string; state: string; node_id: string }>(
      store,
      "SELECT run_id, state, node_id FROM node_attempts WHERE attempt_id = :attemptId",
      { attemptId: opts.attemptId },
    );
    if (
      !attempt || attempt.run_id !== runId || attempt.state !== "running" ||
      attempt.node_id !== opts.nodeId
    ) {
      throw new TransitionError(
        runId,
        "wait",
        describeState(tx.run),
        `attempt ${opts.attemptId} is not the running attempt of node ${opts.nodeId}`,
      );
    }
    const decisionId = store.ids.next("decision");
    execute(
      store,
      "UPDATE node_attempts SET state = 'waiting' WHERE attempt_id = :attemptId",
      { attemptId: opts.attemptId },
    );
    execute(
      store,
      "INSERT INTO human_decisions (decision_id, run_id, attempt_id, node_id, kind, request_json, " +
        "answer_schema_json, default_at, default_answer_json, state, created_at) VALUES " +
        "(:decisionId, :runId, :attemptId, :nodeId, :kind, :request, :answerSchema, :defaultAt, " +
        ":defaultAnswer, 'pending', :now)",
      {
        decisionId,
        runId,
        attemptId: opts.attemptId,
        nodeId: opts.nodeId,
        kind: opts.kind,
        request,
        answerSchema,
        defaultAt: opts.timeoutDefault ? tx.now + opts.timeoutDefault.afterMs : null,
        defaultAnswer,
        now: tx.now,
      },
    );
    setRunState(store, runId, "waiting", tx.now);
    setQueueState(store, runId, "parked", tx.now);
    releaseLeaseInTx(store, claim.resource, tx.now);
    // A model turn stranded earlier gets its successor now: the run waits for an answer.
    releaseTurnIntentsInTx(store, runId, null, tx.now);
    if (opts.presentation) {
      presentWaitingInTx(
        store,
        { runId, attemptId: opts.attemptId, nodeId: opts.nodeId },
        opts.presentation,
        tx.now,
      );
    }
    return {
      type: "run.waiting",
      payload: { decisionId, nodeId: opts.nodeId, kind: opts.kind },
      summary: { state: "waiting", nodeId: opts.nodeId, kind: opts.kind },
      result: decisionId,
    };
  });
  return { revision, decisionId: result };
}

/**
 * `running/starting|running` -> `running/parked` (host shutdown, worker exit at a boundary). A
 * still-running attempt becomes `interrupted` and runs again as a new attempt; if it was an
 * external attempt with unsettled effects they become `ambiguous` and the run is blocked
 * `effectAmbiguous` (`blocked: true`).
 */
export function parkRun(
  store: StateStore,
  claim: Claim,
  opts: { reason: string } & WorkerWriteOptions,
): { revision: number; blocked: boolean } {
  const runId = claimRunId(claim);
  const reason = opts.reason.slice(0, 64);
  const { revision, result } = protectedWrite(store, claim, target(runId, opts), (tx) => {
    expectState(tx.run, "park", isActive);
    const stopped = stopAtBoundary(store, runId, tx.now, {
      code: "interrupted",
      message: `The worker stopped before the node finished: ${reason}`,
    });
    releaseLeaseInTx(store, claim.resource, tx.now);
    return {
      type: "run.parked",
      payload: { reason, blocked: stopped.blocked },
      summary: { state: "running", queue: "parked", reason },
      result: stopped.blocked,
    };
  });
  return { revision, blocked: result };
}

export interface BlockRunOptions extends WorkerWriteOptions {
  runId: string;
  reason: BlockedReason;
  /** Short operator-facing detail (kept on the run row, not in events). */
  detail: string;
}

/**
 * Parks the run with a blocked reason; the scheduler never launches it until `resumeRun`. With a
 * claim it is a protected write on a live run; without one it applies to a queued or parked run
 * (an expired claim is first replaced by a control claim).
 */
export function blockRun(
  store: StateStore,
  claim: Claim | null,
  opts: BlockRunOptions,
): { revision: number } {
  const detail = opts.detail.slice(0, 1024);
  const apply = (now: number, runState: { state: string; queue_state: string }) => {
    const open = openAttempt(store, opts.runId);
    if (open?.state === "running") {
      closeAttempt(store, open.attempt_id, "interrupted", now, {
        code: opts.reason,
        message: `The run was blocked: ${opts.reason}`,
      });
    }
    if (runState.state === "running") setQueueState(store, opts.runId, "parked", now);
    releaseLeaseInTx(store, `run:${opts.runId}`, now);
    execute(
      store,
      "UPDATE runs SET blocked_reason = :reason, blocked_detail = :detail WHERE run_id = :runId",
      { reason: opts.reason, detail, runId: opts.runId },
    );
  };
  const entry = {
    type: "run.blocked",
    payload: { reason: opts.reason },
    summary: { state: "running", queue: "parked", blocked: opts.reason },
  };
  if (claim) {
    if (claimRunId(claim) !== opts.runId) {
      throw new TransitionError(opts.runId, "block", "the claim belongs to another run");
    }
    const { revision } = protectedWrite(store, claim, target(opts.runId, opts), (tx) => {
      expectState(tx.run, "block", isActive);
      apply(tx.now, tx.run);
      return { ...entry, result: undefined };
    });
    return { revision };
  }
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const run = requireRun(store, opts.runId);
    expectState(
      run,
      "block",
      (r) =>
        (r.state === "queued" && r.queue_state === "queued") ||
        (r.state === "running" && r.queue_state === "parked"),
    );
    takeAuthorityInTx(store, opts.runId, null, now);
    const revision = nextRevision(store, opts.runId);
    apply(now, run);
    appendHistory(store, opts.runId, revision, now, {
      ...entry,
      summary: { state: run.state, queue: run.queue_state, blocked: opts.reason },
    });
    return { revision };
  });
}

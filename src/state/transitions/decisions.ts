/**
 * How a waiting checkpoint or human decision closes: `waiting/parked` -> `running/parked`.
 *
 *   answerDecision         `checkpoint.answer`, `decision.answer`: the attempt becomes `ok` with
 *                          the (already validated) answer as its output
 *   applyDecisionDefault   the saved `onTimeout` default at its deadline (`timeoutDefault`)
 *   timeOutWaitingAttempt  the author's `timeoutMs` passed while waiting: the attempt ends
 *                          `timed_out` and routes like any timed-out node
 *
 * Each is ONE transaction under a control claim (generation + 1, released before commit):
 * decision, resolution, attempt, pending interactive request, run, lease, event, viewer delta and
 * command receipt. The run resumes in place (no continuation run): it is launchable again and
 * the next worker routes on from the closed attempt. Every refusal is checked inside the same
 * transaction, so an answer after the deadline can never win over the default.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import { acquireClaimInTx, releaseLeaseInTx, runResource } from "../claims.ts";
import { AnswerRefusedError, endedState, RevisionConflictError } from "../errors.ts";
import { type CommandReceiptInput, recordHostCommandInTx } from "../host-commands.ts";
import { appendHistory, nextRevision } from "../journal.ts";
import { type StateStore } from "../store.ts";
import { execute, queryOne } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { encodeValue } from "../values.ts";
import {
  closeAttempt,
  expectState,
  isTerminalRunState,
  requireRun,
  setRunState,
} from "./common.ts";
import { supersedeWaitingPresentationInTx } from "./turn-intents.ts";

export type WaitingKind = "checkpoint" | "humanDecision";

export interface ClosedDecision {
  runId: string;
  decisionId: string;
  nodeId: string;
  attemptId: string;
  revision: number;
  /** The control claim's generation: any older owner is fenced. */
  generation: number;
}

interface DecisionRow {
  decision_id: string;
  run_id: string;
  attempt_id: string;
  node_id: string;
  kind: WaitingKind;
  state: "pending" | "resolved" | "timedOut" | "cancelled";
  default_at: number | null;
  default_answer_json: string | null;
  deadline_at: number | null;
  resolution: string | null;
  resolved_at: number | null;
}

const DECISION_SELECT = "SELECT d.decision_id, d.run_id, d.attempt_id, d.node_id, d.kind, " +
  "d.state, d.default_at, d.default_answer_json, a.deadline_at, h.resolution, h.resolved_at " +
  "FROM human_decisions d JOIN node_attempts a ON a.attempt_id = d.attempt_id " +
  "LEFT JOIN human_decision_resolutions h ON h.decision_id = d.decision_id";

export interface AnswerDecisionOptions {
  runId: string;
  nodeId: string;
  /** The waiting attempt the answer is for; another (older) attempt is refused as stale. */
  attemptId: string;
  /** `checkpoint` for `checkpoint.answer`, `humanDecision` for `decision.answer`. */
  kind: WaitingKind;
  /** The answer, already checked against what the node declared (see `readWaiting`). */
  answer: JsonValue;
  /** Owner id of the host taking the control claim. */
  ownerId: string;
  expectedRevision?: number;
  receipt?: CommandReceiptInput;
}

/** Records a person's (or, for a checkpoint, the model's) answer. Event `run.answered`. */
export function answerDecision(store: StateStore, opts: AnswerDecisionOptions): ClosedDecision {
  const answer = encodeValue("decision answer", opts.answer);
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const run = requireRun(store, opts.runId);
    if (opts.expectedRevision !== undefined && opts.expectedRevision !== run.revision) {
      throw new RevisionConflictError(run.run_id, opts.expectedRevision, run.revision);
    }
    const row = queryOne<DecisionRow>(
      store,
      `${DECISION_SELECT} WHERE d.attempt_id = :attemptId AND d.run_id = :runId`,
      { attemptId: opts.attemptId, runId: opts.runId },
    );
    if (!row) throw refuseUnknownAttempt(store, run, opts);
    refuseClosedOrWrong(row, opts, run.state, now);
    expectState(run, "answer", (r) => r.state === "waiting" && r.queue_state === "parked");
    return closeInTx(store, row, now, opts.ownerId, {
      resolution: "answered",
      answer,
      receipt: opts.receipt,
    });
  });
}

export interface DeadlineApplyOptions {
  /** Owner id of the host taking the control claim. */
  ownerId: string;
  /** Test hook: called inside the transaction just before COMMIT (crash tests). */
  beforeCommit?: () => void;
}

/**
 * Records a decision's saved `onTimeout` default once its deadline passed. Returns null (and
 * changes nothing) when the decision is no longer pending or not due yet.
 */
export function applyDecisionDefault(
  store: StateStore,
  opts: DeadlineApplyOptions & { decisionId: string },
): ClosedDecision | null {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const row = queryOne<DecisionRow>(store, `${DECISION_SELECT} WHERE d.decision_id = :id`, {
      id: opts.decisionId,
    });
    if (
      !row || row.state !== "pending" || row.default_at === null || row.default_at > now ||
      row.default_answer_json === null
    ) {
      return null;
    }
    const closed = closeInTx(store, row, now, opts.ownerId, {
      resolution: "timeoutDefault",
      answer: row.default_answer_json,
    });
    opts.beforeCommit?.();
    return closed;
  });
}

/**
 * Ends a waiting checkpoint or decision attempt whose own deadline (the author's `timeoutMs`)
 * passed: the attempt is `timed_out` (`nodeTimedOut`), so the next worker follows a
 * `$result.outcome` edge or ends the run `timed_out`. Null when nothing is due any more.
 */
export function timeOutWaitingAttempt(
  store: StateStore,
  opts: DeadlineApplyOptions & { attemptId: string },
): ClosedDecision | null {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const row = queryOne<DecisionRow>(store, `${DECISION_SELECT} WHERE d.attempt_id = :id`, {
      id: opts.attemptId,
    });
    if (!row || row.state !== "pending" || row.deadline_at === null || row.deadline_at > now) {
      return null;
    }
    const closed = closeInTx(store, row, now, opts.ownerId, { resolution: "timedOut" });
    opts.beforeCommit?.();
    return closed;
  });
}

type Closing =
  | { resolution: "answered" | "timeoutDefault"; answer: string; receipt?: CommandReceiptInput }
  | { resolution: "timedOut"; receipt?: undefined };

function closeInTx(
  store: StateStore,
  row: DecisionRow,
  now: number,
  ownerId: string,
  closing: Closing,
): ClosedDecision {
  const runId = row.run_id;
  const resource = runResource(runId);
  // A waiting run holds no claim; the control claim fences anything older before the change.
  const claim = acquireClaimInTx(store, {
    resource,
    runId,
    ownerType: "control",
    ownerId,
    ttlMs: 1,
  }, now);
  const revision = nextRevision(store, runId);
  const timedOut = closing.resolution === "timedOut";
  supersedeWaitingPresentationInTx(store, row.attempt_id, now);
  execute(
    store,
    "UPDATE human_decisions SET state = :state, closed_at = :now WHERE decision_id = :id",
    { id: row.decision_id, state: timedOut ? "timedOut" : "resolved", now },
  );
  execute(
    store,
    "INSERT INTO human_decision_resolutions (decision_id, resolution, answer_json, resolved_at) " +
      "VALUES (:id, :resolution, :answer, :now)",
    {
      id: row.decision_id,
      resolution: closing.resolution,
      answer: timedOut ? null : closing.answer,
      now,
    },
  );
  if (timedOut) {
    closeAttempt(store, row.attempt_id, "timed_out", now, {
      code: "nodeTimedOut",
      message: `Nobody answered ${describeKind(row.kind)} "${row.node_id}" before its deadline`,
    });
  } else {
    execute(
      store,
      "UPDATE node_attempts SET state = 'ok', output_json = :answer, finished_at = :now " +
        "WHERE attempt_id = :attemptId AND state = 'waiting'",
      { attemptId: row.attempt_id, answer: closing.answer, now },
    );
  }
  // A Pi session may be showing this request: it is settled with the decision.
  execute(
    store,
    "UPDATE interactive_requests SET status = :status, settled_at = :now " +
      "WHERE attempt_id = :attemptId AND status = 'pending'",
    { attemptId: row.attempt_id, status: timedOut ? "timedOut" : "settled", now },
  );
  setRunState(store, runId, "running", now);
  releaseLeaseInTx(store, resource, now);
  const payload = {
    decisionId: row.decision_id,
    nodeId: row.node_id,
    attemptId: row.attempt_id,
  };
  appendHistory(
    store,
    runId,
    revision,
    now,
    timedOut
      ? {
        type: "node.timed_out",
        payload: { ...payload, code: "nodeTimedOut" },
        summary: { state: "running", queue: "parked", nodeId: row.node_id, attempt: "timed_out" },
      }
      : {
        type: "run.answered",
        payload: { ...payload, kind: row.kind, resolution: closing.resolution },
        summary: { state: "running", queue: "parked", nodeId: row.node_id },
      },
  );
  if (closing.receipt) recordHostCommandInTx(store, closing.receipt, { runId, revision, now });
  return {
    runId,
    decisionId: row.decision_id,
    nodeId: row.node_id,
    attemptId: row.attempt_id,
    revision,
    generation: claim.generation,
  };
}

/** Why an answer naming an attempt with no decision of this run is refused. */
function refuseUnknownAttempt(
  store: StateStore,
  run: { run_id: string; state: string },
  opts: AnswerDecisionOptions,
): AnswerRefusedError {
  const waiting = queryOne<{ node_id: string; attempt_id: string }>(
    store,
    "SELECT a.node_id, a.attempt_id FROM node_attempts a JOIN human_decisions d ON " +
      "d.attempt_id = a.attempt_id WHERE a.run_id = :runId AND a.state IN ('running', 'waiting') " +
      "AND d.state = 'pending'",
    { runId: run.run_id },
  );
  if (!waiting) {
    return new AnswerRefusedError(
      "notWaiting",
      `Answer refused: run ${run.run_id} is not waiting for an answer: ` +
        (isTerminalRunState(run.state)
          ? endedState(run.state)
          // Waiting with no pending decision: an interactive step waits for its Pi session.
          : run.state === "waiting"
          ? "it waits for a Pi step, not an answer"
          : `it is ${run.state}`),
    );
  }
  if (waiting.node_id !== opts.nodeId) {
    return new AnswerRefusedError(
      "nodeNotWaiting",
      `Answer refused: run ${run.run_id} waits at node "${waiting.node_id}", not "${opts.nodeId}"`,
    );
  }
  return new AnswerRefusedError(
    "staleAttempt",
    `Answer refused: attempt ${opts.attemptId} is not the waiting attempt of node ` +
      `"${opts.nodeId}" (it waits as attempt ${waiting.attempt_id}); read the run's status again`,
  );
}

/** Refuses an answer to a decision that closed, names another node, or is of the other kind. */
function refuseClosedOrWrong(
  row: DecisionRow,
  opts: AnswerDecisionOptions,
  runState: string,
  now: number,
): void {
  const at = (ms: number | null) => (ms === null ? "" : ` at ${new Date(ms).toISOString()}`);
  if (row.node_id !== opts.nodeId) {
    throw row.state === "pending"
      ? new AnswerRefusedError(
        "nodeNotWaiting",
        `Answer refused: run ${row.run_id} waits at node "${row.node_id}", not "${opts.nodeId}"`,
      )
      : new AnswerRefusedError(
        "staleAttempt",
        `Answer refused: attempt ${opts.attemptId} belongs to node "${row.node_id}", not "${opts.nodeId}"`,
      );
  }
  if (row.state !== "pending") {
    const what = `${describeKind(row.kind)} "${row.node_id}"`;
    switch (row.resolution) {
      case "answered":
        throw new AnswerRefusedError(
          "alreadyAnswered",
          `Answer refused: ${what} was already answered${at(row.resolved_at)}`,
        );
      case "timeoutDefault":
        throw new AnswerRefusedError(
          "deadlinePassed",
          `Answer refused: the deadline of ${what} passed and its default was recorded${
            at(row.resolved_at)
          }`,
        );
      case "timedOut":
        throw new AnswerRefusedError(
          "deadlinePassed",
          `Answer refused: ${what} timed out${at(row.resolved_at)} before anyone answered`,
        );
      default:
        throw new AnswerRefusedError(
          "notWaiting",
          `Answer refused: ${what} was closed when the run was ${runState}`,
        );
    }
  }
  if (row.kind !== opts.kind) {
    throw new AnswerRefusedError(
      "wrongKind",
      row.kind === "humanDecision"
        ? `Answer refused: "${row.node_id}" is a protected human decision; only a person ` +
          "answers it, with decision.answer (pi-workflows answer)"
        : `Answer refused: "${row.node_id}" is a checkpoint; answer it with checkpoint.answer`,
    );
  }
  const due = [row.default_at, row.deadline_at].filter((t): t is number => t !== null && t <= now);
  if (due.length > 0) {
    throw new AnswerRefusedError(
      "deadlinePassed",
      `Answer refused: the deadline of ${describeKind(row.kind)} "${row.node_id}" passed${
        at(Math.min(...due))
      }; the host records what its timeout says`,
    );
  }
}

function describeKind(kind: WaitingKind): string {
  return kind === "humanDecision" ? "human decision" : "checkpoint";
}

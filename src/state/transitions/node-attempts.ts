/**
 * Node attempts of a live worker (all protected writes under the run claim, run stays
 * `running/running`): start, updates, finish, fail. Plus the host-enforced attempt deadline.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import { progressFields } from "../../protocol/progress-fields.ts";
import type { FactError, NodeEffect, NodeOutcome } from "../../protocol/run-facts.ts";
import { formatUsage, type StepUsage } from "../../protocol/step-usage.ts";
import type { SubmissionTally } from "../../protocol/submissions.ts";
import { usageColumns, usageSums } from "../run-spend.ts";
import { type Claim, claimRunId, releaseLeaseInTx } from "../claims.ts";
import {
  type ProtectedTx,
  protectedWrite,
  workerTarget as target,
  type WorkerWriteOptions,
} from "../protected-write.ts";
import { TransitionError } from "../errors.ts";
import { type StateStore } from "../store.ts";
import { executeArgs, queryOne, queryOneArgs } from "../statements.ts";
import { encodeValue } from "../values.ts";
import { boundedError, closeAttempt, describeState, expectState, setQueueState } from "./common.ts";
import { insertNotificationInTx, type NotificationKind } from "./notifications.ts";

/** What a notify node says to the run's origin session. */
export interface NotifyMessage {
  kind: NotificationKind;
  message: string;
}

export interface RecordNodeStartedOptions extends WorkerWriteOptions {
  attemptId: string;
  nodeId: string;
  nodeKind: string;
  effect: NodeEffect;
  /** Resolved wall-clock deadline (epoch ms) or null. */
  deadlineAt: number | null;
}

export const isLive = (r: { state: string; queue_state: string }) =>
  r.state === "running" && r.queue_state === "running";

/** A new `running` attempt (sequence = previous + 1); event `node.started`. */
export function recordNodeStarted(
  store: StateStore,
  claim: Claim,
  opts: RecordNodeStartedOptions,
): { revision: number; sequence: number } {
  const runId = claimRunId(claim);
  const { revision, result } = protectedWrite(store, claim, target(runId, opts), (tx) => {
    expectState(tx.run, "start a node of", isLive);
    // No pre-SELECT for an open attempt: the partial unique index `node_attempts_one_open`
    // refuses a second one; only then is the open attempt looked up for the message.
    let row: { sequence: number } | undefined;
    try {
      row = queryOneArgs<{ sequence: number }>(
        store,
        "INSERT INTO node_attempts (attempt_id, run_id, sequence, node_id, node_kind, effect, " +
          "state, generation, started_at, deadline_at) VALUES (?1, ?2, (SELECT " +
          "COALESCE(MAX(sequence), 0) + 1 FROM node_attempts WHERE run_id = ?2), ?3, ?4, ?5, " +
          "'running', ?6, ?7, ?8) RETURNING sequence",
        opts.attemptId,
        runId,
        opts.nodeId,
        opts.nodeKind,
        opts.effect,
        claim.generation,
        tx.now,
        opts.deadlineAt,
      );
    } catch (error) {
      const open = queryOne<{ attempt_id: string }>(
        store,
        "SELECT attempt_id FROM node_attempts WHERE run_id = :runId AND state IN ('running', 'waiting')",
        { runId },
      );
      if (!open) throw error;
      throw new TransitionError(
        runId,
        "start a node of",
        describeState(tx.run),
        `attempt ${open.attempt_id} is still open`,
      );
    }
    return {
      type: "node.started",
      payload: { attemptId: opts.attemptId, nodeId: opts.nodeId, sequence: row!.sequence },
      summary: { attempt: "running", nodeId: opts.nodeId, state: "running" },
      result: row!.sequence,
    };
  });
  return { revision, sequence: result };
}

/** Requires `attemptId` to be the run's running attempt. */
export function requireRunningAttempt(
  tx: ProtectedTx,
  attemptId: string,
  transition: string,
): string {
  expectState(tx.run, transition, isLive);
  const row = queryOne<{ node_id: string; state: string; run_id: string }>(
    tx.store,
    "SELECT node_id, state, run_id FROM node_attempts WHERE attempt_id = :attemptId",
    { attemptId },
  );
  if (!row || row.run_id !== tx.runId || row.state !== "running") {
    throw new TransitionError(
      tx.runId,
      transition,
      describeState(tx.run),
      `attempt ${attemptId} is ${
        row ? (row.run_id === tx.runId ? row.state : "of another run") : "unknown"
      }`,
    );
  }
  return row.node_id;
}

export interface RecordNodeUpdateOptions extends WorkerWriteOptions {
  attemptId: string;
  /** Update channel, e.g. `progress`, `stream`. */
  type: string;
  /** Key within the type; the latest value per (run, type, key) is kept with a count. */
  key: string;
  data: JsonValue;
  /** The attempt's node, named in the event so followers can show it. */
  nodeId?: string;
}

/** Keeps the latest update per (run, type, key); event `node.update`. */
export function recordNodeUpdate(
  store: StateStore,
  claim: Claim,
  opts: RecordNodeUpdateOptions,
): { revision: number } {
  const runId = claimRunId(claim);
  const data = encodeValue("node update", opts.data);
  const progress = opts.type === "progress" ? progressFields(opts.data) : null;
  const { revision } = protectedWrite(store, claim, target(runId, opts), (tx) => {
    expectState(tx.run, "update a node of", isLive);
    // The attempt check rides on the upsert; only a miss pays for the detailed lookup.
    const changed = executeArgs(
      store,
      "INSERT INTO node_updates (run_id, type, key, attempt_id, data_json, count, updated_at) " +
        "SELECT ?1, ?2, ?3, attempt_id, ?4, 1, ?5 FROM node_attempts WHERE " +
        "attempt_id = ?6 AND run_id = ?1 AND state = 'running' " +
        "ON CONFLICT (run_id, type, key) DO UPDATE SET attempt_id = ?6, " +
        "data_json = ?4, count = count + 1, updated_at = ?5",
      runId,
      opts.type,
      opts.key,
      data,
      tx.now,
      opts.attemptId,
    );
    if (changed !== 1) requireRunningAttempt(tx, opts.attemptId, "update a node of");
    return {
      type: "node.update",
      // Keys in sorted order, so the payload is canonical as built (values.ts `encodeValue`).
      payload: {
        attemptId: opts.attemptId,
        key: opts.key,
        ...(opts.nodeId === undefined ? {} : { nodeId: opts.nodeId }),
        // A follower shows progress numbers from the event alone; no other update data.
        ...(progress ? { progress: progress as unknown as JsonValue } : {}),
        type: opts.type,
      },
      summary: { attemptId: opts.attemptId, state: "running", update: opts.type },
      result: undefined,
    };
  });
  return { revision };
}

/**
 * A long model step's usage so far (its whole usage, not an increment), so a crash before its
 * outcome loses none of it; event `node.usage` with the sums only.
 */
export function recordNodeUsage(
  store: StateStore,
  claim: Claim,
  opts: { attemptId: string; usage: StepUsage } & WorkerWriteOptions,
): { revision: number } {
  const runId = claimRunId(claim);
  const usage = usageColumns(opts.usage);
  const { revision } = protectedWrite(store, claim, target(runId, opts), (tx) => {
    expectState(tx.run, "record the usage of a node of", isLive);
    const changed = executeArgs(
      store,
      "UPDATE node_attempts SET usage_json = ?1, usage_tokens = ?2, usage_cost = ?3 " +
        "WHERE attempt_id = ?4 AND run_id = ?5 AND state = 'running'",
      usage.json,
      usage.tokens,
      usage.cost,
      opts.attemptId,
      runId,
    );
    if (changed !== 1) requireRunningAttempt(tx, opts.attemptId, "record the usage of a node of");
    return {
      type: "node.usage",
      payload: { attemptId: opts.attemptId, usage: usageSums(usage) },
      summary: { attemptId: opts.attemptId, state: "running", usage: formatUsage(opts.usage) },
      result: undefined,
    };
  });
  return { revision };
}

/**
 * SQL setting an attempt's submissions tally from parameters `?n` (submitted: null keeps the
 * stored tally), `?n+1` (rejected) and `?n+2` (last rejection): an accepted submission's tally
 * rides on its outcome's commit (worker/submission-recorder.ts).
 */
const SET_TALLY = (n: number) =>
  `submitted = COALESCE(?${n}, submitted), rejected = COALESCE(?${n + 1}, rejected), ` +
  `last_rejection = CASE WHEN ?${n} IS NULL THEN last_rejection ELSE ?${n + 2} END `;

/**
 * The running attempt succeeds with `output` (a durable boundary); event `node.finished`. A
 * notify node's attempt carries its `notification`, inserted in the same transaction.
 */
export function recordNodeFinished(
  store: StateStore,
  claim: Claim,
  opts:
    & {
      attemptId: string;
      output: JsonValue;
      notification?: NotifyMessage;
      usage?: StepUsage;
      submissions?: SubmissionTally;
    }
    & WorkerWriteOptions,
): { revision: number; notificationId: string | null } {
  const runId = claimRunId(claim);
  const output = encodeValue("node output", opts.output);
  const usage = opts.usage ? usageColumns(opts.usage) : null;
  const tally = opts.submissions ?? null;
  const { revision, result } = protectedWrite(store, claim, target(runId, opts), (tx) => {
    expectState(tx.run, "finish a node of", isLive);
    // The attempt check rides on the update; only a miss pays for the detailed lookup.
    const nodeId = queryOneArgs<{ node_id: string }>(
      store,
      "UPDATE node_attempts SET state = 'ok', output_json = ?1, finished_at = ?2, " +
        "usage_json = COALESCE(?5, usage_json), usage_tokens = COALESCE(?6, usage_tokens), " +
        "usage_cost = CASE WHEN ?5 IS NULL THEN usage_cost ELSE ?7 END, " + SET_TALLY(8) +
        "WHERE attempt_id = ?3 AND run_id = ?4 AND state = 'running' RETURNING node_id",
      output,
      tx.now,
      opts.attemptId,
      runId,
      usage?.json ?? null,
      usage?.tokens ?? null,
      usage?.cost ?? null,
      tally?.submitted ?? null,
      tally?.rejected ?? null,
      tally?.lastRejection ?? null,
    )?.node_id ?? requireRunningAttempt(tx, opts.attemptId, "finish a node of");
    const notificationId = opts.notification
      ? insertNotificationInTx(store, {
        runId,
        attemptId: opts.attemptId,
        nodeId,
        ...opts.notification,
      }, tx.now)
      : null;
    return {
      type: "node.finished",
      payload: {
        attemptId: opts.attemptId,
        nodeId,
        ...(notificationId ? { notificationId } : {}),
        ...(usage ? { usage: usageSums(usage) } : {}),
      },
      summary: { attempt: "ok", nodeId, state: "running" },
      result: notificationId,
    };
  });
  return { revision, notificationId: result };
}

/** The running attempt ends with a non-ok outcome the workflow can route on; event `node.failed`. */
export function recordNodeFailed(
  store: StateStore,
  claim: Claim,
  opts:
    & {
      attemptId: string;
      outcome: Exclude<NodeOutcome, "ok">;
      error: FactError;
      usage?: StepUsage;
      submissions?: SubmissionTally;
    }
    & WorkerWriteOptions,
): { revision: number } {
  const runId = claimRunId(claim);
  const error = boundedError(opts.error);
  const usage = opts.usage ? usageColumns(opts.usage) : null;
  const tally = opts.submissions ?? null;
  const { revision } = protectedWrite(store, claim, target(runId, opts), (tx) => {
    expectState(tx.run, "fail a node of", isLive);
    // As for a finish: the attempt check rides on the update, a miss pays for the lookup.
    const nodeId = queryOneArgs<{ node_id: string }>(
      store,
      "UPDATE node_attempts SET state = ?1, finished_at = ?2, error_code = ?3, error_message = ?4, " +
        "usage_json = COALESCE(?7, usage_json), usage_tokens = COALESCE(?8, usage_tokens), " +
        "usage_cost = CASE WHEN ?7 IS NULL THEN usage_cost ELSE ?9 END, " + SET_TALLY(10) +
        "WHERE attempt_id = ?5 AND run_id = ?6 AND state = 'running' RETURNING node_id",
      opts.outcome,
      tx.now,
      error.code,
      error.message,
      opts.attemptId,
      runId,
      usage?.json ?? null,
      usage?.tokens ?? null,
      usage?.cost ?? null,
      tally?.submitted ?? null,
      tally?.rejected ?? null,
      tally?.lastRejection ?? null,
    )?.node_id ?? requireRunningAttempt(tx, opts.attemptId, "fail a node of");
    return {
      type: "node.failed",
      payload: {
        attemptId: opts.attemptId,
        code: opts.error.code,
        nodeId,
        outcome: opts.outcome,
        ...(usage ? { usage: usageSums(usage) } : {}),
      },
      summary: { attempt: opts.outcome, nodeId, state: "running" },
      result: undefined,
    };
  });
  return { revision };
}

/**
 * Host-enforced node deadline: the running attempt becomes `timed_out` (`workerTimedOut`), the
 * claim is released and the run parks (`running/parked`) so a new worker routes from that fact.
 */
export function timeOutAttempt(
  store: StateStore,
  claim: Claim,
  opts: { attemptId: string } & WorkerWriteOptions,
): { revision: number } {
  const runId = claimRunId(claim);
  const { revision } = protectedWrite(store, claim, target(runId, opts), (tx) => {
    const nodeId = requireRunningAttempt(tx, opts.attemptId, "time out a node of");
    closeAttempt(store, opts.attemptId, "timed_out", tx.now, {
      code: "workerTimedOut",
      message: "The node exceeded its deadline and its worker was stopped",
    });
    setQueueState(store, runId, "parked", tx.now);
    releaseLeaseInTx(store, claim.resource, tx.now);
    return {
      type: "node.timed_out",
      payload: { attemptId: opts.attemptId, code: "workerTimedOut", nodeId },
      summary: { attempt: "timed_out", nodeId, queue: "parked", state: "running" },
      result: undefined,
    };
  });
  return { revision };
}

/**
 * A host-enforced limit (output, memory): the running attempt fails with `error`, the claim is
 * released and the run parks (`running/parked`), so a new worker routes from that failure, like
 * after a host-enforced deadline.
 */
export function failAttemptForLimit(
  store: StateStore,
  claim: Claim,
  opts: { attemptId: string; error: FactError } & WorkerWriteOptions,
): { revision: number } {
  const runId = claimRunId(claim);
  const { revision } = protectedWrite(store, claim, target(runId, opts), (tx) => {
    const nodeId = requireRunningAttempt(tx, opts.attemptId, "stop a node of");
    closeAttempt(store, opts.attemptId, "failed", tx.now, boundedError(opts.error));
    setQueueState(store, runId, "parked", tx.now);
    releaseLeaseInTx(store, claim.resource, tx.now);
    return {
      type: "node.failed",
      payload: { attemptId: opts.attemptId, code: opts.error.code, nodeId, outcome: "failed" },
      summary: { attempt: "failed", nodeId, queue: "parked", state: "running" },
      result: undefined,
    };
  });
  return { revision };
}

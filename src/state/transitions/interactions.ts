/**
 * Interactive requests: an origin-session model step waits for the Pi session with no worker.
 *
 *   requestInteraction   worker (`interaction.requested`, under its claim): `running/running` ->
 *                        `waiting/parked`, the attempt `waiting`, a pending request, claim released
 *   claimInteraction     the session's current request (oldest pending); records `claimed_at`
 *
 * The session then presents it (interaction-presentation.ts) and calls its tools
 * (interaction-tool-calls.ts); verdicts, reminders and deadlines are in interaction-verdicts.ts.
 * Those need no run claim: the run waits unclaimed, and each write goes through
 * `waitingRunWrite` (waiting-run-write.ts), which first proves no live claim exists.
 */
import { fingerprint, type JsonValue } from "../../protocol/canonical-json.ts";
import { type Claim, claimRunId, releaseLeaseInTx } from "../claims.ts";
import {
  protectedWrite,
  workerTarget as target,
  type WorkerWriteOptions,
} from "../protected-write.ts";
import { TransitionError } from "../errors.ts";
import { currentSessionInteraction, type SessionInteraction } from "../interaction-queries.ts";
import { type StateStore } from "../store.ts";
import { execute, queryOne } from "../statements.ts";
import { writeTransaction, writeUnsynced } from "../transactions.ts";
import { encodeValue } from "../values.ts";
import { describeState, expectState, setQueueState, setRunState } from "./common.ts";
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
    setRunState(store, runId, "waiting", tx.now);
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
 * `claimed_at` (idempotent: later claims change nothing). Its commit is synced: the answer
 * (`interaction.claim`) carries `claimedAt` after it, and that path is not a handoff's (the
 * submit's `next` is, `claimInteractionLater`).
 */
export function claimInteraction(
  store: StateStore,
  sessionId: string,
): SessionInteraction | undefined {
  const { current, record } = claimInteractionLater(store, sessionId, { synced: true });
  record();
  return current;
}

/**
 * `claimInteraction` for an answer that should not wait for a commit: the request as its first
 * claim records it, and `record`, which the caller runs once the answer left, records that
 * claim time. The time only informs (a presentation records it too) and is not durable: a host
 * that dies before `record` leaves it to the next claim, which takes another, and so does a power
 * loss after it: its commit is not synced (`writeUnsynced`), so the host is not held by an fsync
 * while the session goes on.
 */
export function claimInteractionLater(
  store: StateStore,
  sessionId: string,
  opts: { synced?: boolean } = {},
): { current: SessionInteraction | undefined; record(): void } {
  const current = currentSessionInteraction(store, sessionId);
  if (!current || current.request.claimed_at !== null) return { current, record: () => {} };
  const now = store.clock.now();
  return {
    current: { ...current, request: { ...current.request, claimed_at: now } },
    record: () =>
      (opts.synced === true ? writeTransaction : writeUnsynced)(store, () => {
        execute(
          store,
          "UPDATE interactive_requests SET claimed_at = :now WHERE request_id = :id " +
            "AND claimed_at IS NULL",
          { id: current.request.request_id, now },
        );
      }),
  };
}

/** Small helpers shared by the lifecycle transitions (inside their transactions). */
import { readRunRow, type RunRow } from "../protected-write.ts";
import { endedState, NotFoundError, TransitionError } from "../errors.ts";
import { isTerminalRunState } from "../journal.ts";
import { type StateStore } from "../store.ts";
import { execute, queryOne } from "../statements.ts";
import type { BlockedReason, QueueState, RunState } from "../../protocol/run-operations.ts";
import type { FactError } from "../../protocol/run-facts.ts";

// The run, queue and blocked-reason enumerations are the protocol's (one list each).
export {
  BLOCKED_REASONS,
  type BlockedReason,
  QUEUE_STATES,
  type QueueState,
  RUN_STATES,
  type RunState,
} from "../../protocol/run-operations.ts";
export { isTerminalRunState, TERMINAL_RUN_STATES } from "../journal.ts";

/** Why a blocked run waits for an operator, in words. */
const BLOCKED_WORDS: Record<BlockedReason, string> = {
  workflowSourceChanged: "its workflow file changed",
  effectAmbiguous: "an external effect may have applied",
  unsupportedInput: "its input is not supported",
  credentialsMissing: "the host does not hold the keys it needs",
  budgetExceeded: "its spend reached its budget",
};

/**
 * The run's state as a transition error says it to whoever asked (`it has ended (cancelled)`,
 * `it is paused`, `it is blocked: its workflow file changed`), not the tables' `state/queue`.
 */
export function describeState(run: RunRow): string {
  if (isTerminalRunState(run.state)) return endedState(run.state);
  if (run.blocked_reason) {
    return `it is blocked: ${
      BLOCKED_WORDS[run.blocked_reason as BlockedReason] ?? run.blocked_reason
    }`;
  }
  if (run.paused) return "it is paused";
  if (run.state === "queued") return "it is queued";
  if (run.state === "waiting") return "it is waiting for input";
  if (run.queue_state === "starting") return "it is starting";
  if (run.queue_state === "parked") return "it is between steps";
  return "it is running";
}

export function requireRun(store: StateStore, runId: string): RunRow {
  const run = readRunRow(store, runId);
  if (!run) throw new NotFoundError("run", runId);
  return run;
}

/** Throws `TransitionError` unless `ok(run)`. */
export function expectState(
  run: RunRow,
  transition: string,
  ok: (run: RunRow) => boolean,
  detail?: string,
): void {
  if (!ok(run)) throw new TransitionError(run.run_id, transition, describeState(run), detail);
}

export function setQueueState(
  store: StateStore,
  runId: string,
  state: QueueState,
  now: number,
): void {
  execute(
    store,
    "UPDATE run_queue SET state = :state, updated_at = :now WHERE run_id = :runId",
    { runId, state, now },
  );
}

export function setRunState(
  store: StateStore,
  runId: string,
  state: RunState,
  now: number,
): void {
  execute(
    store,
    "UPDATE runs SET state = :state, state_changed_at = :now WHERE run_id = :runId",
    { runId, state, now },
  );
}

export interface OpenAttempt {
  attempt_id: string;
  node_id: string;
  effect: "pure" | "external";
  state: "running" | "waiting";
}

/** The run's running or waiting attempt, if any. */
export function openAttempt(store: StateStore, runId: string): OpenAttempt | undefined {
  return queryOne<OpenAttempt>(
    store,
    "SELECT attempt_id, node_id, effect, state FROM node_attempts WHERE run_id = :runId " +
      "AND state IN ('running', 'waiting')",
    { runId },
  );
}

/** Closes an open attempt with a final state (and an error for non-ok outcomes). */
export function closeAttempt(
  store: StateStore,
  attemptId: string,
  state: "interrupted" | "failed" | "timed_out" | "cancelled",
  now: number,
  error: { code: string; message: string } | null,
): void {
  execute(
    store,
    "UPDATE node_attempts SET state = :state, finished_at = :now, error_code = :code, " +
      "error_message = :message WHERE attempt_id = :attemptId AND state IN ('running', 'waiting')",
    { attemptId, state, now, code: error?.code ?? null, message: error?.message ?? null },
  );
}

/**
 * Settles effect recovery state of a run that stops for good: pending effects are cancelled;
 * applying effects become ambiguous (the external outcome cannot be proven).
 */
export function settleEffectsOnStop(store: StateStore, runId: string, now: number): void {
  execute(
    store,
    "UPDATE effects SET state = 'cancelled', updated_at = :now WHERE run_id = :runId " +
      "AND state = 'pending'",
    { runId, now },
  );
  markApplyingAmbiguous(store, runId, now);
}

export function markApplyingAmbiguous(store: StateStore, runId: string, now: number): number {
  execute(
    store,
    "UPDATE effect_attempts SET state = CASE (SELECT e.state FROM effects e WHERE e.effect_id = " +
      "effect_attempts.effect_id) WHEN 'applying' THEN 'ambiguous' ELSE 'cancelled' END, " +
      "finished_at = :now WHERE state = 'applying' AND effect_id IN " +
      "(SELECT effect_id FROM effects WHERE run_id = :runId)",
    { runId, now },
  );
  return execute(
    store,
    "UPDATE effects SET state = 'ambiguous', updated_at = :now WHERE run_id = :runId " +
      "AND state = 'applying'",
    { runId, now },
  );
}

/**
 * A run that will resume: its applying managed effects go back to `pending`. They carry an
 * external idempotency key, so the retry reserves and applies them again under the same key.
 */
function releaseApplyingEffects(store: StateStore, runId: string, now: number): void {
  execute(
    store,
    "UPDATE effect_attempts SET state = 'cancelled', finished_at = :now WHERE state = 'applying' " +
      "AND effect_id IN (SELECT effect_id FROM effects WHERE run_id = :runId)",
    { runId, now },
  );
  execute(
    store,
    "UPDATE effects SET state = 'pending', updated_at = :now WHERE run_id = :runId " +
      "AND state = 'applying'",
    { runId, now },
  );
}

/** Cancels pending decisions, interactive requests and validating submissions of a run. */
export function cancelPendingInteractions(store: StateStore, runId: string, now: number): void {
  execute(
    store,
    "INSERT INTO human_decision_resolutions (decision_id, resolution, resolved_at) " +
      "SELECT decision_id, 'cancelled', :now FROM human_decisions WHERE run_id = :runId " +
      "AND state = 'pending'",
    { runId, now },
  );
  execute(
    store,
    "UPDATE human_decisions SET state = 'cancelled', closed_at = :now WHERE run_id = :runId " +
      "AND state = 'pending'",
    { runId, now },
  );
  execute(
    store,
    "UPDATE interactive_submissions SET outcome = 'rejected', decided_at = :now, " +
      "error_code = 'runEnded', error_message = 'The run ended before the submission was validated' " +
      "WHERE outcome = 'validating' AND request_id IN " +
      "(SELECT request_id FROM interactive_requests WHERE run_id = :runId AND status = 'pending')",
    { runId, now },
  );
  execute(
    store,
    "UPDATE interactive_requests SET status = 'cancelled', settled_at = :now " +
      "WHERE run_id = :runId AND status = 'pending'",
    { runId, now },
  );
}

/**
 * Parks a live run at its last durable boundary: interrupts the running attempt, returns its
 * managed effects to `pending` (retryable under their key), and when the attempt was external
 * with no managed effect (or an already ambiguous one) records it ambiguous and blocks the run
 * `effectAmbiguous`. Parks the queue.
 */
export function stopAtBoundary(
  store: StateStore,
  runId: string,
  now: number,
  why: { code: string; message: string },
): { interruptedAttemptId: string | null; blocked: boolean } {
  const open = openAttempt(store, runId);
  let blocked = false;
  if (open) {
    closeAttempt(store, open.attempt_id, "interrupted", now, why);
    if (open.effect === "external") blocked = externalOutcomeUncertain(store, open.attempt_id, now);
  }
  releaseApplyingEffects(store, runId, now);
  if (blocked) {
    execute(
      store,
      "UPDATE runs SET blocked_reason = 'effectAmbiguous', blocked_detail = :detail " +
        "WHERE run_id = :runId",
      {
        runId,
        detail: "An external action may have applied without a receipt; inspect it, then " +
          "record what happened with 'pi-workflows effect resolve' or cancel the run",
      },
    );
  }
  setQueueState(store, runId, "parked", now);
  return { interruptedAttemptId: open?.attempt_id ?? null, blocked };
}

/**
 * An external attempt's outcome is uncertain when it reserved no managed effect at all (an
 * unmanaged action: recorded as an `ambiguous` unmanaged effect row) or one of its effects is
 * already ambiguous. Managed effects that were applying are retryable under their key.
 */
export function externalOutcomeUncertain(
  store: StateStore,
  attemptId: string,
  now: number,
): boolean {
  const counts = queryOne<{ total: number; unsettled: number }>(
    store,
    "SELECT COUNT(*) AS total, COALESCE(SUM(state = 'ambiguous'), 0) AS unsettled " +
      "FROM effects WHERE attempt_id = :attemptId",
    { attemptId },
  )!;
  if (counts.total > 0) return counts.unsettled > 0;
  execute(
    store,
    "INSERT INTO effects (effect_id, run_id, attempt_id, effect_key, effect_type, " +
      "request_fingerprint, state, created_at, updated_at) SELECT :effectId, run_id, attempt_id, " +
      "'unmanaged:' || attempt_id, 'unmanaged', 'none', 'ambiguous', :now, :now " +
      "FROM node_attempts WHERE attempt_id = :attemptId",
    { effectId: store.ids.next("effect"), attemptId, now },
  );
  return true;
}

/** A durable error cut to the stored bounds (code 128, message 8192 characters). */
export function boundedError(error: FactError): FactError {
  return { code: error.code.slice(0, 128), message: error.message.slice(0, 8192) };
}

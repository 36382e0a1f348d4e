/**
 * The deadlines of waiting checkpoints and human decisions, for the host deadline timer. Each is
 * a column with a partial index, so the next one due is one indexed `MIN` and the due ones one
 * indexed range, however many runs wait:
 *   decision defaults   `human_decisions.default_at` (pending, with a saved `onTimeout`)
 *   wait timeouts       `node_attempts.deadline_at` of waiting checkpoint and decision attempts
 *                       (the author's `timeoutMs`; none by default)
 */
import { type StateStore } from "./store.ts";
import { queryAll, queryOne } from "./statements.ts";

const WAIT_KINDS = "('checkpoint', 'humanDecision')";

/** Earliest pending decision default, or null. */
export function nextDecisionDefaultAt(store: StateStore): number | null {
  return queryOne<{ due: number | null }>(
    store,
    "SELECT MIN(default_at) AS due FROM human_decisions WHERE state = 'pending' " +
      "AND default_at IS NOT NULL",
  )?.due ?? null;
}

/** Decisions whose default is due at `now`, earliest first. */
export function dueDecisionDefaults(
  store: StateStore,
  now: number,
  limit: number,
): { decisionId: string; runId: string }[] {
  return queryAll<{ decision_id: string; run_id: string }>(
    store,
    "SELECT decision_id, run_id FROM human_decisions WHERE state = 'pending' " +
      "AND default_at IS NOT NULL AND default_at <= :now ORDER BY default_at LIMIT :limit",
    { now, limit },
  ).map((r) => ({ decisionId: r.decision_id, runId: r.run_id }));
}

/** Earliest deadline of a waiting checkpoint or decision attempt, or null. */
export function nextWaitTimeoutAt(store: StateStore): number | null {
  return queryOne<{ due: number | null }>(
    store,
    "SELECT MIN(deadline_at) AS due FROM node_attempts WHERE state = 'waiting' " +
      `AND deadline_at IS NOT NULL AND node_kind IN ${WAIT_KINDS}`,
  )?.due ?? null;
}

/** Waiting checkpoint and decision attempts whose deadline is due at `now`, earliest first. */
export function dueWaitTimeouts(
  store: StateStore,
  now: number,
  limit: number,
): { attemptId: string; runId: string }[] {
  return queryAll<{ attempt_id: string; run_id: string }>(
    store,
    "SELECT attempt_id, run_id FROM node_attempts WHERE state = 'waiting' " +
      `AND deadline_at IS NOT NULL AND deadline_at <= :now AND node_kind IN ${WAIT_KINDS} ` +
      "ORDER BY deadline_at LIMIT :limit",
    { now, limit },
  ).map((r) => ({ attemptId: r.attempt_id, runId: r.run_id }));
}

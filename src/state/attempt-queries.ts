/** Attempt rows of one run as a light status listing (facts: run-facts-text.ts). */
import type { AttemptFact } from "../protocol/run-facts.ts";
import type { StepUsage } from "../protocol/step-usage.ts";
import type { SubmissionTally } from "../protocol/submissions.ts";
import { type StateStore } from "./store.ts";
import { queryAllArgs, queryOneArgs } from "./statements.ts";

interface AttemptRow {
  attempt_id: string;
  node_id: string;
  sequence: number;
  node_kind: string;
  effect: AttemptFact["effect"];
  state: AttemptFact["state"];
  error_code: string | null;
  error_message: string | null;
  started_at: number;
  finished_at: number | null;
  deadline_at: number | null;
  adopted_from_attempt_id: string | null;
  usage_json: string | null;
  submitted: number;
  rejected: number;
  last_rejection: string | null;
}

export interface AttemptSummary {
  attemptId: string;
  nodeId: string;
  sequence: number;
  nodeKind: string;
  effect: AttemptFact["effect"];
  state: AttemptFact["state"];
  startedAt: number;
  finishedAt: number | null;
  deadlineAt: number | null;
  error: { code: string; message: string } | null;
  /** A fork's adopted attempt: the parent's attempt it copies (it did not run in this run). */
  adoptedFrom: string | null;
  /** A model step's usage (so far, while it runs); absent for other nodes. */
  usage?: StepUsage;
  /** A model step's submissions, once the model submitted anything. */
  submissions?: SubmissionTally;
}

const SUMMARY_COLUMNS = "attempt_id, node_id, sequence, node_kind, effect, state, error_code, " +
  "error_message, started_at, finished_at, deadline_at, adopted_from_attempt_id, usage_json, " +
  "submitted, rejected, last_rejection";

/** This run's attempts without outputs (status views), one query, in sequence order. */
export function listAttempts(store: StateStore, runId: string): AttemptSummary[] {
  return listAttemptsPage(store, runId, { limit: Number.MAX_SAFE_INTEGER });
}

/**
 * A page of a run's attempts in sequence order: the last `limit`, or with `after` the first
 * `limit` whose sequence is above it.
 */
export function listAttemptsPage(
  store: StateStore,
  runId: string,
  page: { limit: number; after?: number },
): AttemptSummary[] {
  const rows = page.after === undefined
    ? queryAllArgs<AttemptRow>(
      store,
      `SELECT * FROM (SELECT ${SUMMARY_COLUMNS} FROM node_attempts WHERE run_id = ?1 ` +
        "ORDER BY sequence DESC LIMIT ?2) ORDER BY sequence",
      runId,
      page.limit,
    )
    : queryAllArgs<AttemptRow>(
      store,
      `SELECT ${SUMMARY_COLUMNS} FROM node_attempts WHERE run_id = ?1 AND sequence > ?2 ` +
        "ORDER BY sequence LIMIT ?3",
      runId,
      page.after,
      page.limit,
    );
  return rows.map(toSummary);
}

/**
 * The last `limit` attempts of one node (`nodeId`) or of every node (null), in sequence order:
 * the steps `run.logs` shows.
 */
export function listNodeAttempts(
  store: StateStore,
  runId: string,
  nodeId: string | null,
  limit: number,
): AttemptSummary[] {
  if (nodeId === null) return listAttemptsPage(store, runId, { limit });
  return queryAllArgs<AttemptRow>(
    store,
    `SELECT * FROM (SELECT ${SUMMARY_COLUMNS} FROM node_attempts WHERE run_id = ?1 ` +
      "AND node_id = ?2 ORDER BY sequence DESC LIMIT ?3) ORDER BY sequence",
    runId,
    nodeId,
    limit,
  ).map(toSummary);
}

/**
 * The node visit an attempt ran as (1-based), the way the engine counts it: one more than the
 * node's attempts before it that settled (an interrupted attempt's rerun is the same visit).
 */
export function attemptVisit(
  store: StateStore,
  runId: string,
  nodeId: string,
  sequence: number,
): number {
  const row = queryOneArgs<{ settled: number }>(
    store,
    "SELECT count(*) AS settled FROM node_attempts WHERE run_id = ?1 AND node_id = ?2 " +
      "AND sequence < ?3 AND state NOT IN ('interrupted', 'running')",
    runId,
    nodeId,
    sequence,
  );
  return 1 + (row?.settled ?? 0);
}

function toSummary(a: AttemptRow): AttemptSummary {
  return {
    attemptId: a.attempt_id,
    nodeId: a.node_id,
    sequence: a.sequence,
    nodeKind: a.node_kind,
    effect: a.effect,
    state: a.state,
    startedAt: a.started_at,
    finishedAt: a.finished_at,
    deadlineAt: a.deadline_at,
    error: a.error_code !== null ? { code: a.error_code, message: a.error_message ?? "" } : null,
    adoptedFrom: a.adopted_from_attempt_id,
    ...(a.usage_json === null ? {} : { usage: JSON.parse(a.usage_json) as StepUsage }),
    ...(a.submitted === 0 ? {} : { submissions: submissionTally(a) }),
  };
}

/** The stored submission columns as a tally. */
export function submissionTally(
  row: { submitted: number; rejected: number; last_rejection: string | null },
): SubmissionTally {
  return {
    submitted: row.submitted,
    rejected: row.rejected,
    ...(row.last_rejection === null ? {} : { lastRejection: row.last_rejection }),
  };
}

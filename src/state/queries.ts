/**
 * Read queries. All work on a read-only store (status, viewers, doctor) as well as the host's.
 * Results hold ids, states and counts; callers decide what is safe to print (status output
 * never shows project paths, session ids or payloads).
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { UpdateSummary } from "../protocol/run-operations.ts";
import type { Budget, RunSpend } from "../protocol/budget.ts";
import { fencedLeaseSql } from "./claims.ts";
import {
  ADOPTED_SPEND_COLUMNS,
  budgetOf,
  RUN_SPEND_COLUMNS,
  type RunSpendRow,
} from "./run-spend.ts";
import { newestEventSql, runRevisionSql } from "./journal.ts";
import { type StateStore } from "./store.ts";
import { queryAll, queryOne, queryOneArgs } from "./statements.ts";
import { decodeValue } from "./values.ts";
import { readBudgetRaise } from "./budget-stop.ts";
import { type AttemptSummary, listAttemptsPage } from "./attempt-queries.ts";

export { type AttemptSummary, listAttempts } from "./attempt-queries.ts";
export { readRunFacts } from "./run-facts-text.ts";
export {
  type HostStatusCountFields,
  hostStatusCountFields,
  type HostStatusCounts,
  hostStatusCounts,
} from "./status-counts.ts";

interface RunDbRow extends RunSpendRow {
  run_id: string;
  workflow_name: string;
  workflow_ref: string;
  title: string | null;
  state: string;
  queue_state: string;
  paused: number;
  blocked_reason: string | null;
  budget_stop: string | null;
  project_path: string;
  definition_digest: string;
  input_hash: string;
  parent_run_id: string | null;
  forked_from_run_id: string | null;
  forked_from_node_id: string | null;
  revision: number;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
  output_json: string | null;
  error_code: string | null;
  error_message: string | null;
  execution_mode: "interactive" | "headless";
  origin_session_id: string | null;
  pi_context: "none" | "project" | null;
  pi_session_file: string | null;
}

export interface RunView {
  runId: string;
  workflowName: string;
  workflowRef: string;
  title: string | null;
  state: string;
  queueState: string;
  paused: boolean;
  blockedReason: string | null;
  /**
   * A run blocked `budgetExceeded`: the budget that stopped it and the spend against it (its
   * own, or its controller's total over all its child runs), as recorded when it blocked.
   */
  budgetStop: string | null;
  /** Blocked `budgetExceeded`: the limits a raise must lift (budget-stop.ts `readBudgetRaise`). */
  budgetRaise: (keyof Budget)[] | null;
  /** Private: never print in status output. */
  projectPath: string;
  definitionDigest: string;
  inputHash: string;
  parentRunId: string | null;
  /** A fork (`run.rerun`): the run and node it reran from. */
  forkedFrom: { runId: string; nodeId: string } | null;
  revision: number;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
  output: JsonValue | undefined;
  error: { code: string; message: string } | null;
  executionMode: "interactive" | "headless";
  /** Private: never print in status output. */
  originSessionId: string | null;
  /** A headless run with Pi: what its Pi children load (`none` or `project`). */
  piContext: "none" | "project" | null;
  /** A headless run with Pi: its Pi session file (`status` names it for the owner). */
  piSessionFile: string | null;
  /** What the run's model steps used so far (a fork's adopted attempts included). */
  spend: RunSpend;
  /** A fork: what its adopted attempts cost (in `spend` too); null for other runs. */
  adoptedSpend: RunSpend | null;
  budget: Budget;
}

const RUN_SELECT = "SELECT r.run_id, r.workflow_name, r.workflow_ref, r.title, r.state, " +
  "q.state AS queue_state, r.paused, r.blocked_reason, CASE WHEN r.blocked_reason = " +
  "'budgetExceeded' THEN r.blocked_detail END AS budget_stop, r.project_path, " +
  "r.definition_digest, " +
  `r.input_hash, r.parent_run_id, r.forked_from_run_id, r.forked_from_node_id, ${runRevisionSql()} AS revision, r.created_at, ` +
  `${newestEventSql("at")} AS updated_at, r.finished_at, ` +
  "r.output_json, r.error_code, r.error_message, b.execution_mode, b.origin_session_id, " +
  "b.pi_context, b.pi_session_file, " +
  `r.budget_cost, r.budget_tokens, ${RUN_SPEND_COLUMNS}, ${ADOPTED_SPEND_COLUMNS} ` +
  "FROM runs r JOIN run_queue q ON q.run_id = r.run_id JOIN run_bindings b ON b.run_id = r.run_id";

function toView(store: StateStore, row: RunDbRow): RunView {
  return {
    runId: row.run_id,
    workflowName: row.workflow_name,
    workflowRef: row.workflow_ref,
    title: row.title,
    state: row.state,
    queueState: row.queue_state,
    paused: row.paused === 1,
    blockedReason: row.blocked_reason,
    budgetStop: row.budget_stop,
    budgetRaise: row.blocked_reason === "budgetExceeded"
      ? readBudgetRaise(store, row.run_id)
      : null,
    projectPath: row.project_path,
    definitionDigest: row.definition_digest,
    inputHash: row.input_hash,
    parentRunId: row.parent_run_id,
    forkedFrom: row.forked_from_run_id === null
      ? null
      : { runId: row.forked_from_run_id, nodeId: row.forked_from_node_id ?? "" },
    revision: row.revision,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    finishedAt: row.finished_at,
    output: decodeValue(row.output_json),
    error: row.error_code ? { code: row.error_code, message: row.error_message ?? "" } : null,
    executionMode: row.execution_mode,
    originSessionId: row.origin_session_id,
    piContext: row.pi_context,
    piSessionFile: row.pi_session_file,
    spend: { tokens: row.spend_tokens ?? 0, cost: row.spend_cost },
    adoptedSpend: row.adopted_tokens === null
      ? null
      : { tokens: row.adopted_tokens, cost: row.adopted_cost },
    budget: budgetOf(row.budget_cost, row.budget_tokens),
  };
}

/** One run, or undefined. */
export function readRun(store: StateStore, runId: string): RunView | undefined {
  const row = queryOne<RunDbRow>(store, `${RUN_SELECT} WHERE r.run_id = :runId`, { runId });
  return row && toView(store, row);
}

export interface RunStatusPage {
  run: RunView;
  /** The page of attempts, in sequence order. */
  attempts: AttemptSummary[];
  /** All attempts of the run. */
  attemptCount: number;
  /** UTF-8 bytes of the stored output (0 without one), for callers that bound their answer. */
  outputBytes: number;
}

const RUN_STATUS_SELECT = RUN_SELECT.replace(
  " FROM runs r",
  ", (SELECT COUNT(*) FROM node_attempts n WHERE n.run_id = r.run_id) AS attempt_count, " +
    "COALESCE(LENGTH(CAST(r.output_json AS BLOB)), 0) AS output_bytes FROM runs r",
) + " WHERE r.run_id = ?1";

/**
 * One run for `run.status` with a page of its attempts: the last `limit` ones, or with `after`
 * the first `limit` ones whose sequence is above it. Undefined when the run does not exist.
 */
export function readRunStatus(
  store: StateStore,
  runId: string,
  page: { limit: number; after?: number } = { limit: Number.MAX_SAFE_INTEGER },
): RunStatusPage | undefined {
  const row = queryOneArgs<RunDbRow & { attempt_count: number; output_bytes: number }>(
    store,
    RUN_STATUS_SELECT,
    runId,
  );
  if (!row) return undefined;
  return {
    run: toView(store, row),
    attempts: listAttemptsPage(store, runId, page),
    attemptCount: row.attempt_count,
    outputBytes: row.output_bytes,
  };
}

/** The latest update per (type, key) of a run, newest first, with the node that sent it. */
export function listNodeUpdates(store: StateStore, runId: string, limit = 100): UpdateSummary[] {
  return queryAll<{
    node_id: string;
    attempt_id: string;
    type: string;
    key: string;
    data_json: string;
    count: number;
    updated_at: number;
  }>(
    store,
    "SELECT a.node_id, u.attempt_id, u.type, u.key, u.data_json, u.count, u.updated_at " +
      "FROM node_updates u JOIN node_attempts a ON a.attempt_id = u.attempt_id " +
      "WHERE u.run_id = :runId ORDER BY u.updated_at DESC, u.type, u.key LIMIT :limit",
    { runId, limit },
  ).map((r) => ({
    nodeId: r.node_id,
    attemptId: r.attempt_id,
    type: r.type,
    key: r.key,
    data: decodeValue(r.data_json) ?? null,
    count: r.count,
    updatedAt: r.updated_at,
  }));
}

const ACTIVE_RUNS = "r.state NOT IN ('completed', 'failed', 'timed_out', 'cancelled')";

/** Where a page of `listRuns` continues: the runs created before this one (newest first). */
export interface RunCursor {
  createdAt: number;
  runId: string;
}

/** Newest first; without `all`, only non-terminal runs; with `before`, only older ones. */
export function listRuns(
  store: StateStore,
  opts: { all?: boolean; limit?: number; before?: RunCursor } = {},
): RunView[] {
  const where = [
    opts.all ? "" : ACTIVE_RUNS,
    opts.before ? "(r.created_at, r.run_id) < (:c, :id)" : "",
  ]
    .filter(Boolean);
  return queryAll<RunDbRow>(
    store,
    `${RUN_SELECT} ${where.length ? `WHERE ${where.join(" AND ")} ` : ""}` +
      "ORDER BY r.created_at DESC, r.run_id DESC LIMIT :limit",
    {
      limit: opts.limit ?? 100,
      ...(opts.before ? { c: opts.before.createdAt, id: opts.before.runId } : {}),
    },
  ).map((row) => toView(store, row));
}

/** How many runs `listRuns` would page through (without a cursor). */
export function countRuns(store: StateStore, opts: { all?: boolean } = {}): number {
  return queryOne<{ n: number }>(
    store,
    `SELECT COUNT(*) AS n FROM runs r${opts.all ? "" : ` WHERE ${ACTIVE_RUNS}`}`,
  )!.n;
}

export interface RunEvent {
  runId: string;
  seq: number;
  type: string;
  runRevision: number;
  payload: JsonValue;
  at: number;
}

/** Events of a run after `afterSeq`, in order. */
export function listEvents(
  store: StateStore,
  runId: string,
  afterSeq = 0,
  limit = 1000,
): RunEvent[] {
  return queryAll<{
    run_id: string;
    seq: number;
    type: string;
    run_revision: number;
    payload_json: string;
    at: number;
  }>(
    store,
    "SELECT e.run_id, e.seq, e.type, e.run_revision, e.payload_json, e.at FROM runs r " +
      "JOIN events e ON e.event_key BETWEEN r.run_no * 4294967296 + :afterSeq + 1 AND " +
      "r.run_no * 4294967296 + 4294967295 WHERE r.run_id = :runId ORDER BY e.event_key LIMIT :limit",
    { runId, afterSeq, limit },
  ).map((r) => ({
    runId: r.run_id,
    seq: r.seq,
    type: r.type,
    runRevision: r.run_revision,
    payload: decodeValue(r.payload_json) ?? {},
    at: r.at,
  }));
}

export interface ViewerDelta {
  /** Global delta revision: poll with the last one seen. */
  revision: number;
  /** Null for a delta of no run (`runs.pruned`). */
  runId: string | null;
  runRevision: number;
  kind: string;
  summary: JsonValue;
  at: number;
}

/** Viewer deltas after global revision `revision`, oldest first. */
export function viewerDeltasSince(
  store: StateStore,
  revision: number,
  limit = 1000,
): ViewerDelta[] {
  return queryAll<{
    revision: number;
    run_id: string | null;
    run_revision: number;
    kind: string;
    summary_json: string;
    at: number;
  }>(
    store,
    "SELECT revision, run_id, run_revision, kind, summary_json, at FROM viewer_deltas " +
      "WHERE revision > :revision ORDER BY revision LIMIT :limit",
    { revision, limit },
  ).map((r) => ({
    revision: r.revision,
    runId: r.run_id,
    runRevision: r.run_revision,
    kind: r.kind,
    summary: decodeValue(r.summary_json) ?? {},
    at: r.at,
  }));
}

/** Runs whose worker claim expired while live (recovery step 3). */
export function listExpiredRuns(store: StateStore, now = store.clock.now()): string[] {
  return queryAll<{ run_id: string }>(
    store,
    "SELECT r.run_id FROM runs r JOIN run_queue q ON q.run_id = r.run_id LEFT JOIN leases l " +
      "ON l.resource = 'run:' || r.run_id WHERE r.state = 'running' AND q.state IN " +
      "('starting', 'running') AND (l.token_hash IS NULL OR l.expires_at <= :now OR " +
      `${fencedLeaseSql("l")}) ORDER BY r.created_at`,
    { now },
  ).map((r) => r.run_id);
}

export interface ActiveWorker {
  workerEpoch: string;
  runId: string;
  generation: number;
  status: "starting" | "live";
  pid: number | null;
  startIdentity: string | null;
  startedAt: number;
}

/** Worker epochs recorded `starting` or `live` (orphan checks, supervision). */
export function listActiveWorkers(store: StateStore): ActiveWorker[] {
  return queryAll<{
    worker_epoch: string;
    run_id: string;
    generation: number;
    status: "starting" | "live";
    pid: number | null;
    start_identity: string | null;
    started_at: number;
  }>(
    store,
    "SELECT worker_epoch, run_id, generation, status, pid, start_identity, started_at " +
      "FROM run_workers WHERE status IN ('starting', 'live') ORDER BY started_at",
  ).map((r) => ({
    workerEpoch: r.worker_epoch,
    runId: r.run_id,
    generation: r.generation,
    status: r.status,
    pid: r.pid,
    startIdentity: r.start_identity,
    startedAt: r.started_at,
  }));
}

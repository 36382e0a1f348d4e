/**
 * Read-only queries for viewers (`pi-workflows view`, the Pi widget's host answers). They are
 * shaped for an incremental refresh loop: one cheap head check (`latestViewerRevision`), the run
 * ids changed since a revision, small run rows, pages of attempt summaries, and payload reads
 * (outputs, decision requests, definition snapshots) only for what a user opened. Functions that
 * read payload columns count their rows in `store.readStats.payloadRows` so the bounded-read gate
 * can be tested. Nothing here returns a project path, session id or token.
 */
import type { Budget, RunSpend } from "../protocol/budget.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { StepUsage } from "../protocol/step-usage.ts";
import type { SubmissionTally } from "../protocol/submissions.ts";
import { submissionTally } from "./attempt-queries.ts";
import { newestEventSql, runRevisionSql } from "./journal.ts";
import {
  ADOPTED_SPEND_COLUMNS,
  budgetOf,
  RUN_SPEND_COLUMNS,
  type RunSpendRow,
} from "./run-spend.ts";
import { type StateStore } from "./store.ts";
import { countPayloadRows, queryAllArgs, queryOneArgs } from "./statements.ts";
import { decodeValue } from "./values.ts";

export interface RunRow {
  runId: string;
  workflowName: string;
  title: string | null;
  state: string;
  queueState: string;
  paused: boolean;
  blockedReason: string | null;
  executionMode: string;
  revision: number;
  parentRunId: string | null;
  /** A fork (`run.rerun`): the run and node it reran from. */
  forkedFrom: { runId: string; nodeId: string } | null;
  definitionDigest: string;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
  /** Attempts recorded so far. */
  steps: number;
  /** Node of the running or waiting attempt, if any, and when it started. */
  openNode: string | null;
  openStartedAt: number | null;
  error: { code: string; message: string } | null;
  /** What its model steps used (a fork's adopted part apart); null before any reported usage. */
  spend: (RunSpend & { adopted?: RunSpend }) | null;
  budget: Budget;
}

interface RunDbRow extends RunSpendRow {
  run_id: string;
  workflow_name: string;
  title: string | null;
  state: string;
  queue_state: string;
  paused: number;
  blocked_reason: string | null;
  execution_mode: string;
  revision: number;
  parent_run_id: string | null;
  forked_from_run_id: string | null;
  forked_from_node_id: string | null;
  definition_digest: string;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
  steps: number;
  open_node: string | null;
  open_started_at: number | null;
  error_code: string | null;
  error_message: string | null;
}

const RUN_ROW_SELECT = "SELECT r.run_id, r.workflow_name, r.title, r.state, q.state AS " +
  `queue_state, r.paused, r.blocked_reason, b.execution_mode, ${runRevisionSql()} AS revision, ` +
  "r.parent_run_id, r.forked_from_run_id, r.forked_from_node_id, r.definition_digest, " +
  "r.created_at, " +
  `${newestEventSql("at")} AS updated_at, r.finished_at, r.error_code, ` +
  "r.error_message, (SELECT COUNT(*) FROM node_attempts a WHERE a.run_id = r.run_id) AS steps, " +
  "(SELECT a.node_id FROM node_attempts a WHERE a.run_id = r.run_id AND a.state IN " +
  "('running', 'waiting')) AS open_node, (SELECT a.started_at FROM node_attempts a WHERE " +
  "a.run_id = r.run_id AND a.state IN ('running', 'waiting')) AS open_started_at, " +
  `r.budget_cost, r.budget_tokens, ${RUN_SPEND_COLUMNS}, ${ADOPTED_SPEND_COLUMNS} ` +
  "FROM runs r JOIN run_queue q ON q.run_id = r.run_id " +
  "JOIN run_bindings b ON b.run_id = r.run_id";

const ACTIVE = "r.state NOT IN ('completed', 'failed', 'timed_out', 'cancelled')";

function toRunRow(r: RunDbRow): RunRow {
  return {
    runId: r.run_id,
    workflowName: r.workflow_name,
    title: r.title,
    state: r.state,
    queueState: r.queue_state,
    paused: r.paused === 1,
    blockedReason: r.blocked_reason,
    executionMode: r.execution_mode,
    revision: r.revision,
    parentRunId: r.parent_run_id,
    forkedFrom: r.forked_from_run_id === null
      ? null
      : { runId: r.forked_from_run_id, nodeId: r.forked_from_node_id ?? "" },
    definitionDigest: r.definition_digest,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    finishedAt: r.finished_at,
    steps: r.steps,
    openNode: r.open_node,
    openStartedAt: r.open_started_at,
    error: r.error_code ? { code: r.error_code, message: r.error_message ?? "" } : null,
    spend: r.spend_tokens === null ? null : {
      tokens: r.spend_tokens,
      cost: r.spend_cost,
      ...(r.adopted_tokens !== null
        ? { adopted: { tokens: r.adopted_tokens, cost: r.adopted_cost } }
        : {}),
    },
    budget: budgetOf(r.budget_cost, r.budget_tokens),
  };
}

/** The newest viewer delta revision (0 for an empty database): the idle check, one row. */
export function latestViewerRevision(store: StateStore): number {
  return queryOneArgs<{ revision: number | null }>(
    store,
    "SELECT MAX(revision) AS revision FROM viewer_deltas",
  )?.revision ?? 0;
}

export interface ChangedRuns {
  /** Distinct run ids with a delta after `after`, up to the window. */
  runIds: string[];
  /** The last revision read; `after` when nothing changed. */
  revision: number;
  /**
   * True when the window filled, retention trimmed deltas after `after`, or a delta of no run
   * came (`runs.pruned`: runs were deleted): the caller should reload rather than patch.
   */
  truncated: boolean;
}

/** Runs that changed after global revision `after`, reading at most `limit` deltas. */
export function changedRunsSince(store: StateStore, after: number, limit = 500): ChangedRuns {
  const rows = queryAllArgs<{ revision: number; run_id: string | null }>(
    store,
    "SELECT revision, run_id FROM viewer_deltas WHERE revision > ?1 ORDER BY revision LIMIT ?2",
    after,
    limit,
  );
  const runIds = new Set<string>();
  let feedWide = false;
  for (const row of rows) {
    if (row.run_id === null) feedWide = true;
    else runIds.add(row.run_id);
  }
  return {
    runIds: [...runIds],
    revision: rows.length > 0 ? rows[rows.length - 1].revision : after,
    // Revisions have no gaps except where retention trimmed the feed's front: a first delta
    // past `after + 1` means deltas this reader never saw are gone.
    truncated: feedWide || rows.length >= limit ||
      (rows.length > 0 && rows[0].revision > after + 1),
  };
}

/** Newest first; without `all`, only runs that have not ended. */
export function listRunRows(
  store: StateStore,
  opts: { all?: boolean; limit?: number } = {},
): RunRow[] {
  return queryAllArgs<RunDbRow>(
    store,
    `${RUN_ROW_SELECT} ${opts.all ? "" : `WHERE ${ACTIVE} `}` +
      "ORDER BY r.created_at DESC, r.run_id DESC LIMIT ?1",
    opts.limit ?? 1000,
  ).map(toRunRow);
}

/** The rows of these runs (any order; unknown ids are skipped). */
export function readRunRows(store: StateStore, runIds: readonly string[]): RunRow[] {
  if (runIds.length === 0) return [];
  return queryAllArgs<RunDbRow>(
    store,
    `${RUN_ROW_SELECT} WHERE r.run_id IN (SELECT value FROM json_each(?1))`,
    JSON.stringify(runIds),
  ).map(toRunRow);
}

export interface AttemptRow {
  attemptId: string;
  sequence: number;
  nodeId: string;
  nodeKind: string;
  effect: string;
  state: string;
  generation: number;
  startedAt: number;
  finishedAt: number | null;
  deadlineAt: number | null;
  error: { code: string; message: string } | null;
  /** Bytes of the stored output (the output itself is read only by `readAttemptDetail`). */
  outputBytes: number;
  /** A model step's submissions, once the model submitted anything. */
  submissions: SubmissionTally | null;
  /** A model step's usage (its whole usage so far while it runs). */
  usage: StepUsage | null;
  /** A fork's step taken over from its parent run (`run.rerun`), not run again. */
  adopted: boolean;
}

/** A page of a run's attempt summaries from `fromSequence` on, in order; no outputs. */
export function listAttemptRows(
  store: StateStore,
  runId: string,
  fromSequence = 1,
  limit = 1000,
): AttemptRow[] {
  return queryAllArgs<{
    attempt_id: string;
    sequence: number;
    node_id: string;
    node_kind: string;
    effect: string;
    state: string;
    generation: number;
    started_at: number;
    finished_at: number | null;
    deadline_at: number | null;
    error_code: string | null;
    error_message: string | null;
    output_bytes: number | null;
    submitted: number;
    rejected: number;
    last_rejection: string | null;
    usage_json: string | null;
    adopted: number;
  }>(
    store,
    "SELECT attempt_id, sequence, node_id, node_kind, effect, state, generation, started_at, " +
      "finished_at, deadline_at, error_code, error_message, LENGTH(output_json) AS output_bytes, " +
      "submitted, rejected, last_rejection, usage_json, " +
      "adopted_from_attempt_id IS NOT NULL AS adopted " +
      "FROM node_attempts WHERE run_id = ?1 AND sequence >= ?2 ORDER BY sequence LIMIT ?3",
    runId,
    fromSequence,
    limit,
  ).map((a) => ({
    attemptId: a.attempt_id,
    sequence: a.sequence,
    nodeId: a.node_id,
    nodeKind: a.node_kind,
    effect: a.effect,
    state: a.state,
    generation: a.generation,
    startedAt: a.started_at,
    finishedAt: a.finished_at,
    deadlineAt: a.deadline_at,
    error: a.error_code ? { code: a.error_code, message: a.error_message ?? "" } : null,
    outputBytes: a.output_bytes ?? 0,
    submissions: a.submitted === 0 ? null : submissionTally(a),
    usage: a.usage_json === null ? null : JSON.parse(a.usage_json) as StepUsage,
    adopted: a.adopted === 1,
  }));
}

export interface ProgressRow {
  attemptId: string;
  key: string;
  completed: number | null;
  total: number | null;
  label: string | null;
  count: number;
  updatedAt: number;
}

/** The latest `progress` update per key of each run (a small payload read per changed run). */
export function readProgress(
  store: StateStore,
  runIds: readonly string[],
): Map<string, ProgressRow[]> {
  const out = new Map<string, ProgressRow[]>();
  if (runIds.length === 0) return out;
  const rows = queryAllArgs<{
    run_id: string;
    attempt_id: string;
    key: string;
    completed: number | null;
    total: number | null;
    label: string | null;
    count: number;
    updated_at: number;
  }>(
    store,
    "SELECT run_id, attempt_id, key, json_extract(data_json, '$.completed') AS completed, " +
      "json_extract(data_json, '$.total') AS total, json_extract(data_json, '$.label') AS label, " +
      "count, updated_at FROM node_updates WHERE type = 'progress' AND run_id IN " +
      "(SELECT value FROM json_each(?1)) ORDER BY run_id, key",
    JSON.stringify(runIds),
  );
  countPayloadRows(store, rows.length);
  for (const r of rows) {
    const list = out.get(r.run_id) ?? [];
    list.push({
      attemptId: r.attempt_id,
      key: r.key,
      completed: typeof r.completed === "number" ? r.completed : null,
      total: typeof r.total === "number" ? r.total : null,
      label: typeof r.label === "string" ? r.label : null,
      count: r.count,
      updatedAt: r.updated_at,
    });
    out.set(r.run_id, list);
  }
  return out;
}

/** The stored definition snapshot of a digest, or undefined (runs started before it existed). */
export function readDefinitionSnapshot(store: StateStore, digest: string): JsonValue | undefined {
  const row = queryOneArgs<{ snapshot_json: string }>(
    store,
    "SELECT snapshot_json FROM workflow_definitions WHERE definition_digest = ?1",
    digest,
  );
  countPayloadRows(store, row ? 1 : 0);
  return row ? decodeValue(row.snapshot_json) : undefined;
}

export interface AttemptDetail {
  attemptId: string;
  output: JsonValue | undefined;
  error: { code: string; message: string } | null;
  effects: {
    effectType: string;
    state: string;
    errorCode: string | null;
    receipt: JsonValue | undefined;
  }[];
  interaction: { kind: string; status: string; createdAt: number; settledAt: number | null } | null;
  decision: {
    kind: string;
    state: string;
    request: JsonValue | undefined;
    resolution: string | null;
    answer: JsonValue | undefined;
  } | null;
}

/**
 * Everything the inspector shows for one attempt: its output, error, managed effects, the
 * interactive request state and the human decision with its presentation. Payload reads.
 */
export function readAttemptDetail(store: StateStore, attemptId: string): AttemptDetail | undefined {
  const a = queryOneArgs<
    { output_json: string | null; error_code: string | null; error_message: string | null }
  >(
    store,
    "SELECT output_json, error_code, error_message FROM node_attempts WHERE attempt_id = ?1",
    attemptId,
  );
  if (!a) return undefined;
  const effects = queryAllArgs<
    { effect_type: string; state: string; error_code: string | null; receipt_json: string | null }
  >(
    store,
    "SELECT effect_type, state, error_code, receipt_json FROM effects WHERE attempt_id = ?1 " +
      "ORDER BY created_at",
    attemptId,
  );
  const interaction = queryOneArgs<
    { kind: string; status: string; created_at: number; settled_at: number | null }
  >(
    store,
    "SELECT kind, status, created_at, settled_at FROM interactive_requests WHERE attempt_id = ?1",
    attemptId,
  );
  const decision = queryOneArgs<{
    kind: string;
    state: string;
    request_json: string;
    resolution: string | null;
    answer_json: string | null;
  }>(
    store,
    "SELECT d.kind, d.state, d.request_json, h.resolution, h.answer_json FROM human_decisions d " +
      "LEFT JOIN human_decision_resolutions h ON h.decision_id = d.decision_id " +
      "WHERE d.attempt_id = ?1",
    attemptId,
  );
  countPayloadRows(store, 1 + effects.length + (decision ? 1 : 0));
  return {
    attemptId,
    output: decodeValue(a.output_json),
    error: a.error_code ? { code: a.error_code, message: a.error_message ?? "" } : null,
    effects: effects.map((e) => ({
      effectType: e.effect_type,
      state: e.state,
      errorCode: e.error_code,
      receipt: decodeValue(e.receipt_json),
    })),
    interaction: interaction
      ? {
        kind: interaction.kind,
        status: interaction.status,
        createdAt: interaction.created_at,
        settledAt: interaction.settled_at,
      }
      : null,
    decision: decision
      ? {
        kind: decision.kind,
        state: decision.state,
        request: decodeValue(decision.request_json),
        resolution: decision.resolution,
        answer: decodeValue(decision.answer_json),
      }
      : null,
  };
}

/** A finished run's output (payload), for the detail view's final section. */
export function readRunOutput(store: StateStore, runId: string): JsonValue | undefined {
  const row = queryOneArgs<{ output_json: string | null }>(
    store,
    "SELECT output_json FROM runs WHERE run_id = ?1",
    runId,
  );
  countPayloadRows(store, row?.output_json != null ? 1 : 0);
  return decodeValue(row?.output_json ?? null);
}

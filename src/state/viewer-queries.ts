/**
 * Read-only queries for viewers (`pi-workflows view`, the Pi widget's host answers). They are
 * shaped for an incremental refresh loop: one cheap head check (`latestViewerRevision`), the run
 * ids changed since a revision, and small run rows. Per-step reads (attempt pages, progress, and
 * payloads only for what a user opened) are in viewer-step-queries.ts. Nothing here returns a
 * project path, session id or token.
 */
import type { Budget, RunSpend } from "../protocol/budget.ts";
import { newestEventSql, runRevisionSql } from "./journal.ts";
import {
  ADOPTED_SPEND_COLUMNS,
  budgetOf,
  RUN_SPEND_COLUMNS,
  type RunSpendRow,
} from "./run-spend.ts";
import { type StateStore } from "./store.ts";
import { queryAllArgs, queryOneArgs } from "./statements.ts";

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

/**
 * Reads of interactive requests and submissions: a session's current request (its oldest pending
 * one), the session's change cursor, due deadlines, leftover validating submissions and what a
 * validation child needs. Read-only; safe on a read-only store.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { runResource } from "./claims.ts";
import { runRevisionSql } from "./journal.ts";
import { type StateStore } from "./store.ts";
import { queryAll, queryOne } from "./statements.ts";
import { decodeValue } from "./values.ts";

export interface InteractionRow {
  request_id: string;
  run_id: string;
  attempt_id: string;
  node_id: string;
  target_session_id: string | null;
  kind: "agent" | "assistantMessage";
  contract_json: string;
  status: "pending" | "settled" | "cancelled" | "timedOut" | "failed";
  accepted_submission_id: string | null;
  reminders: number;
  claimed_at: number | null;
  presentation_entry_id: string | null;
  presented_at: number | null;
  created_at: number;
}

const INTERACTION_COLUMNS = "request_id, run_id, attempt_id, node_id, target_session_id, kind, " +
  "contract_json, status, accepted_submission_id, reminders, claimed_at, presentation_entry_id, " +
  "presented_at, created_at";

export function readInteraction(
  store: StateStore,
  interactionId: string,
): InteractionRow | undefined {
  return queryOne<InteractionRow>(
    store,
    `SELECT ${INTERACTION_COLUMNS} FROM interactive_requests WHERE request_id = :interactionId`,
    { interactionId },
  );
}

export interface SubmissionRow {
  submission_id: string;
  request_id: string;
  idempotency_key: string;
  payload_hash: string;
  outcome: "validating" | "accepted" | "rejected";
  error_code: string | null;
  error_message: string | null;
  submitted_at: number;
  decided_at: number | null;
}

const SUBMISSION_COLUMNS = "submission_id, request_id, idempotency_key, payload_hash, outcome, " +
  "error_code, error_message, submitted_at, decided_at";

export function readSubmission(store: StateStore, submissionId: string): SubmissionRow | undefined {
  return queryOne<SubmissionRow>(
    store,
    `SELECT ${SUBMISSION_COLUMNS} FROM interactive_submissions WHERE submission_id = :submissionId`,
    { submissionId },
  );
}

/** The submission a tool call made before (same request, same tool-call id), if any. */
export function findSubmissionByKey(
  store: StateStore,
  interactionId: string,
  idempotencyKey: string,
): SubmissionRow | undefined {
  return queryOne<SubmissionRow>(
    store,
    `SELECT ${SUBMISSION_COLUMNS} FROM interactive_submissions WHERE request_id = :interactionId ` +
      "AND idempotency_key = :idempotencyKey",
    { interactionId, idempotencyKey },
  );
}

/** The request's latest submission (validating or decided). */
export function latestSubmission(
  store: StateStore,
  interactionId: string,
): SubmissionRow | undefined {
  return queryOne<SubmissionRow>(
    store,
    `SELECT ${SUBMISSION_COLUMNS} FROM interactive_submissions WHERE request_id = :interactionId ` +
      "ORDER BY submitted_at DESC, rowid DESC LIMIT 1",
    { interactionId },
  );
}

/** A waiting run's pending request, as `run.status` shows it (ids and times only). */
export interface RunInteractionRecord {
  interactionId: string;
  nodeId: string;
  attemptId: string;
  nodeKind: string;
  since: number;
  deadlineAt: number | null;
  presented: boolean;
  reminders: number;
  submissions: number;
  validating: boolean;
}

/** The run's pending interactive request, or undefined. */
export function readRunInteraction(
  store: StateStore,
  runId: string,
): RunInteractionRecord | undefined {
  const row = queryOne<{
    request_id: string;
    node_id: string;
    attempt_id: string;
    node_kind: string;
    created_at: number;
    deadline_at: number | null;
    presented_at: number | null;
    reminders: number;
    submissions: number;
    validating: number;
  }>(
    store,
    "SELECT i.request_id, i.node_id, i.attempt_id, a.node_kind, i.created_at, a.deadline_at, " +
      "i.presented_at, i.reminders, " +
      "(SELECT COUNT(*) FROM interactive_submissions s WHERE s.request_id = i.request_id) " +
      "AS submissions, EXISTS (SELECT 1 FROM interactive_submissions s WHERE s.request_id = " +
      "i.request_id AND s.outcome = 'validating') AS validating " +
      "FROM interactive_requests i JOIN node_attempts a ON a.attempt_id = i.attempt_id " +
      "WHERE i.run_id = :runId AND i.status = 'pending' ORDER BY i.created_at LIMIT 1",
    { runId },
  );
  if (!row) return undefined;
  return {
    interactionId: row.request_id,
    nodeId: row.node_id,
    attemptId: row.attempt_id,
    nodeKind: row.node_kind,
    since: row.created_at,
    deadlineAt: row.deadline_at,
    presented: row.presented_at !== null,
    reminders: row.reminders,
    submissions: row.submissions,
    validating: row.validating === 1,
  };
}

export interface SessionInteraction {
  request: InteractionRow;
  /** The run revision now. */
  revision: number;
  /** Later pending requests of the session. */
  waiting: number;
  submission: SubmissionRow | undefined;
}

/**
 * The session's current request: its oldest pending one (one session presents one interaction
 * at a time; the others wait in creation order). Undefined when none is pending.
 */
export function currentSessionInteraction(
  store: StateStore,
  sessionId: string,
): SessionInteraction | undefined {
  const rows = queryAll<InteractionRow & { revision: number }>(
    store,
    `SELECT ${
      INTERACTION_COLUMNS.split(", ").map((c) => `i.${c}`).join(", ")
    }, ${runRevisionSql()} AS revision FROM interactive_requests i JOIN runs r ` +
      "ON r.run_id = i.run_id " +
      "WHERE i.target_session_id = :sessionId AND i.status = 'pending' " +
      "ORDER BY i.created_at, i.rowid",
    { sessionId },
  );
  const first = rows[0];
  if (!first) return undefined;
  const { revision, ...request } = first;
  return {
    request,
    revision,
    waiting: rows.length - 1,
    submission: latestSubmission(store, request.request_id),
  };
}

/**
 * A number that grows whenever anything of the session's runs commits: the sum of their
 * revisions (revisions only grow and runs are never deleted), so it is durable across hosts.
 */
export function sessionCursor(store: StateStore, sessionId: string): number {
  return queryOne<{ n: number }>(
    store,
    `SELECT COALESCE(SUM(${runRevisionSql()}), 0) AS n FROM run_bindings b JOIN runs r ` +
      "ON r.run_id = b.run_id WHERE b.origin_session_id = :sessionId",
    { sessionId },
  )!.n;
}

/** Node kinds an interactive run hands to its Pi session (each becomes an interactive request). */
const MODEL_STEP_KINDS = new Set(["agent", "decision", "assistantMessage"]);

/**
 * Whether the run may still be on its way to an interactive request soon: queued or running,
 * neither paused nor blocked, and its open attempt (when one is running) a model step. False once
 * it ended, waits on something else, or runs another kind of node.
 */
export function runHeadsForStep(store: StateStore, runId: string): boolean {
  const row = queryOne<
    { state: string; paused: number; blocked: string | null; open: string | null }
  >(
    store,
    "SELECT r.state, r.paused, r.blocked_reason AS blocked, (SELECT a.node_kind FROM node_attempts a " +
      "WHERE a.run_id = r.run_id AND a.state = 'running') AS open FROM runs r " +
      "WHERE r.run_id = :runId",
    { runId },
  );
  if (!row || row.paused !== 0 || row.blocked !== null) return false;
  if (row.state !== "queued" && row.state !== "running") return false;
  return row.open === null || MODEL_STEP_KINDS.has(row.open);
}

/** The session's non-terminal interactive run (its reservation) and its revision, if any. */
export function sessionReservation(
  store: StateStore,
  sessionId: string,
): { runId: string; revision: number } | undefined {
  return queryOne<{ runId: string; revision: number }>(
    store,
    `SELECT r.run_id AS runId, ${runRevisionSql()} AS revision FROM run_bindings b JOIN runs r ` +
      "ON r.run_id = b.run_id WHERE b.origin_session_id = :sessionId " +
      "AND b.execution_mode = 'interactive' AND r.state IN ('queued', 'running', 'waiting') " +
      "ORDER BY r.created_at LIMIT 1",
    { sessionId },
  );
}

export interface DueInteraction {
  interactionId: string;
  runId: string;
  attemptId: string;
  deadlineAt: number;
}

/** The earliest deadline of a pending interactive request, or null. */
export function nextInteractionDeadline(store: StateStore): number | null {
  return queryOne<{ due: number | null }>(
    store,
    "SELECT MIN(a.deadline_at) AS due FROM node_attempts a JOIN interactive_requests i " +
      "ON i.attempt_id = a.attempt_id WHERE a.state = 'waiting' AND a.deadline_at IS NOT NULL " +
      "AND i.status = 'pending'",
  )!.due;
}

/** Pending interactive requests whose attempt deadline has passed, earliest first. */
export function listDueInteractions(
  store: StateStore,
  now: number,
  limit: number,
): DueInteraction[] {
  return queryAll<DueInteraction>(
    store,
    "SELECT i.request_id AS interactionId, i.run_id AS runId, a.attempt_id AS attemptId, " +
      "a.deadline_at AS deadlineAt FROM node_attempts a JOIN interactive_requests i " +
      "ON i.attempt_id = a.attempt_id WHERE a.state = 'waiting' AND a.deadline_at IS NOT NULL " +
      "AND a.deadline_at <= :now AND i.status = 'pending' ORDER BY a.deadline_at LIMIT :limit",
    { now, limit },
  );
}

/** Submissions still `validating` (recovery step 9 validates them again in a new child). */
export function listValidatingSubmissions(store: StateStore): string[] {
  return queryAll<{ submission_id: string }>(
    store,
    "SELECT submission_id FROM interactive_submissions WHERE outcome = 'validating' " +
      "ORDER BY submitted_at",
  ).map((r) => r.submission_id);
}

/**
 * What the validation child of one submission needs: the run's source, the payload (the child
 * asks for the run's facts in pieces).
 */
export interface ValidationJob {
  submissionId: string;
  interactionId: string;
  runId: string;
  nodeId: string;
  attemptId: string;
  /** The run claim generation while the request waits (the child's fence). */
  generation: number;
  projectPath: string;
  workflowSource: JsonValue;
  definitionDigest: string;
  inputHash: string;
  submission: JsonValue;
}

/** The job of a `validating` submission, or undefined when it is no longer validating. */
export function readValidationJob(
  store: StateStore,
  submissionId: string,
): ValidationJob | undefined {
  const row = queryOne<{
    request_id: string;
    run_id: string;
    node_id: string;
    attempt_id: string;
    payload_json: string;
    project_path: string;
    workflow_source_json: string;
    definition_digest: string;
    input_hash: string;
  }>(
    store,
    "SELECT i.request_id, i.run_id, i.node_id, i.attempt_id, s.payload_json, r.project_path, " +
      "r.workflow_source_json, r.definition_digest, r.input_hash " +
      "FROM interactive_submissions s JOIN interactive_requests i ON i.request_id = s.request_id " +
      "JOIN runs r ON r.run_id = i.run_id " +
      "WHERE s.submission_id = :submissionId AND s.outcome = 'validating' AND i.status = 'pending'",
    { submissionId },
  );
  if (!row) return undefined;
  const generation = queryOne<{ generation: number }>(
    store,
    "SELECT generation FROM leases WHERE resource = :resource",
    { resource: runResource(row.run_id) },
  )?.generation ?? 1;
  return {
    submissionId,
    interactionId: row.request_id,
    runId: row.run_id,
    nodeId: row.node_id,
    attemptId: row.attempt_id,
    generation,
    projectPath: row.project_path,
    workflowSource: decodeValue(row.workflow_source_json) ?? null,
    definitionDigest: row.definition_digest,
    inputHash: row.input_hash,
    submission: decodeValue(row.payload_json) ?? null,
  };
}

/**
 * Read-only queries for viewers, per step: pages of attempt summaries, a node's progress, and the
 * payloads read only for what a user opened (an attempt's detail, a definition snapshot, a run's
 * output). Payload reads count their rows in `store.readStats.payloadRows` (the bounded-read
 * gate). Run rows and the refresh loop's head checks are in viewer-queries.ts.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { StepUsage } from "../protocol/step-usage.ts";
import type { SubmissionTally } from "../protocol/submissions.ts";
import { submissionTally } from "./attempt-queries.ts";
import { type StateStore } from "./store.ts";
import { countPayloadRows, queryAllArgs, queryOneArgs } from "./statements.ts";
import { decodeValue } from "./values.ts";

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

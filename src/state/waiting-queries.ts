/**
 * What a waiting run asks: its pending checkpoint or human decision with the saved request,
 * answer schema, default and deadlines. `run.status` shows it; the answer handlers check an
 * answer against it. Read-only (fine on a read-only store).
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { type StateStore } from "./store.ts";
import { queryOne } from "./statements.ts";
import { decodeValue } from "./values.ts";

export interface WaitingRecord {
  decisionId: string;
  runId: string;
  nodeId: string;
  attemptId: string;
  kind: "checkpoint" | "humanDecision";
  /** When the run started waiting. */
  since: number;
  /** The attempt's own deadline (the author's `timeoutMs`), or null. */
  deadlineAt: number | null;
  /** When the saved default is recorded, and what it is (human decisions with `onTimeout`). */
  defaultAt: number | null;
  defaultAnswer: JsonValue | undefined;
  request: JsonValue;
  answerSchema: JsonValue | undefined;
}

/** The pending decision of a waiting run, or undefined. One indexed lookup. */
export function readWaiting(store: StateStore, runId: string): WaitingRecord | undefined {
  const row = queryOne<{
    decision_id: string;
    node_id: string;
    attempt_id: string;
    kind: "checkpoint" | "humanDecision";
    created_at: number;
    deadline_at: number | null;
    default_at: number | null;
    default_answer_json: string | null;
    request_json: string;
    answer_schema_json: string | null;
  }>(
    store,
    "SELECT d.decision_id, d.node_id, d.attempt_id, d.kind, d.created_at, a.deadline_at, " +
      "d.default_at, d.default_answer_json, d.request_json, d.answer_schema_json " +
      "FROM node_attempts a JOIN human_decisions d ON d.attempt_id = a.attempt_id " +
      "WHERE a.run_id = :runId AND a.state IN ('running', 'waiting') AND d.state = 'pending'",
    { runId },
  );
  if (!row) return undefined;
  return {
    decisionId: row.decision_id,
    runId,
    nodeId: row.node_id,
    attemptId: row.attempt_id,
    kind: row.kind,
    since: row.created_at,
    deadlineAt: row.deadline_at,
    defaultAt: row.default_at,
    defaultAnswer: decodeValue(row.default_answer_json),
    request: decodeValue(row.request_json) ?? null,
    answerSchema: decodeValue(row.answer_schema_json),
  };
}

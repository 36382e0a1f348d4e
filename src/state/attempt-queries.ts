/** Attempt rows of one run, as facts (with outputs) or as a light status listing. */
import type { AttemptFact } from "../protocol/run-facts.ts";
import { queryAll, type StateStore } from "./store.ts";
import { decodeValue } from "./values.ts";

interface AttemptRow {
  attempt_id: string;
  node_id: string;
  sequence: number;
  node_kind: string;
  effect: AttemptFact["effect"];
  state: AttemptFact["state"];
  output_json?: string | null;
  error_code: string | null;
  error_message: string | null;
  started_at: number;
  finished_at: number | null;
  deadline_at: number | null;
}

/**
 * Attempt facts of one run (outputs included), in sequence order. An answered checkpoint or
 * decision is already an `ok` attempt whose output is the answer.
 */
export function readAttemptFacts(store: StateStore, runId: string): AttemptFact[] {
  return queryAll<AttemptRow>(
    store,
    "SELECT attempt_id, node_id, sequence, node_kind, effect, state, output_json, error_code, " +
      "error_message, started_at, finished_at, deadline_at FROM node_attempts " +
      "WHERE run_id = :runId ORDER BY sequence",
    { runId },
  ).map((a) => ({
    attemptId: a.attempt_id,
    nodeId: a.node_id,
    sequence: a.sequence,
    nodeKind: a.node_kind,
    effect: a.effect,
    state: a.state,
    ...(a.output_json != null ? { output: decodeValue(a.output_json) } : {}),
    ...(a.error_code !== null
      ? { error: { code: a.error_code, message: a.error_message ?? "" } }
      : {}),
    startedAt: a.started_at,
    ...(a.finished_at !== null ? { finishedAt: a.finished_at } : {}),
    deadlineAt: a.deadline_at,
  }));
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
}

/** This run's attempts without outputs (status views), one query, in sequence order. */
export function listAttempts(store: StateStore, runId: string): AttemptSummary[] {
  return queryAll<AttemptRow>(
    store,
    "SELECT attempt_id, node_id, sequence, node_kind, effect, state, error_code, " +
      "error_message, started_at, finished_at, deadline_at FROM node_attempts " +
      "WHERE run_id = :runId ORDER BY sequence",
    { runId },
  ).map((a) => ({
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
  }));
}

/**
 * Ambiguous effects as an operator needs to see them: which node attempt may have applied an
 * external effect without a receipt, and whether that effect was managed (it has a key the
 * external system deduplicates) or not. Fine on a read-only store.
 */
import { type StateStore } from "./store.ts";
import { queryAll } from "./statements.ts";

export interface AmbiguousEffect {
  effectId: string;
  attemptId: string;
  nodeId: string;
  /** `unmanaged` for an action or shell with no managed effect. */
  effectType: string;
  managed: boolean;
}

/** Every `ambiguous` effect of `runId`, oldest first. */
export function listAmbiguousEffects(store: StateStore, runId: string): AmbiguousEffect[] {
  return queryAll<
    { effect_id: string; attempt_id: string; node_id: string; effect_type: string }
  >(
    store,
    "SELECT e.effect_id, e.attempt_id, a.node_id, e.effect_type FROM effects e " +
      "JOIN node_attempts a ON a.attempt_id = e.attempt_id WHERE e.run_id = :runId " +
      "AND e.state = 'ambiguous' ORDER BY a.sequence, e.created_at, e.effect_id",
    { runId },
  ).map((row) => ({
    effectId: row.effect_id,
    attemptId: row.attempt_id,
    nodeId: row.node_id,
    effectType: row.effect_type,
    managed: row.effect_type !== "unmanaged",
  }));
}

export interface BlockingAttempt {
  attemptId: string;
  nodeId: string;
  nodeKind: string;
  effect: "pure" | "external";
  sequence: number;
  /** Ambiguous effects of this attempt. */
  effectIds: string[];
}

/**
 * The attempt that blocks a run `effectAmbiguous`: its latest attempt, when that is an
 * interrupted external one (the engine blocks exactly on it). Undefined otherwise.
 */
export function blockingAttempt(store: StateStore, runId: string): BlockingAttempt | undefined {
  const rows = queryAll<
    {
      attempt_id: string;
      node_id: string;
      node_kind: string;
      effect: "pure" | "external";
      state: string;
      sequence: number;
      effect_id: string | null;
    }
  >(
    store,
    "SELECT a.attempt_id, a.node_id, a.node_kind, a.effect, a.state, a.sequence, e.effect_id " +
      "FROM (SELECT * FROM node_attempts WHERE run_id = :runId ORDER BY sequence DESC LIMIT 1) a " +
      "LEFT JOIN effects e ON e.attempt_id = a.attempt_id AND e.state = 'ambiguous' " +
      "ORDER BY e.created_at, e.effect_id",
    { runId },
  );
  const first = rows[0];
  if (!first || first.state !== "interrupted" || first.effect !== "external") return undefined;
  return {
    attemptId: first.attempt_id,
    nodeId: first.node_id,
    nodeKind: first.node_kind,
    effect: first.effect,
    sequence: first.sequence,
    effectIds: rows.flatMap((r) => (r.effect_id === null ? [] : [r.effect_id])),
  };
}

/** One effect of a run as the test kit compares them (src/testing): no keys, no receipts. */
export interface RunEffect {
  nodeId: string;
  effectType: string;
  state: string;
  /** Effect attempts that settled `applied` (1 for an effect applied once). */
  applied: number;
  /** Effect attempts in all (more than 1: it was applied again after an interruption). */
  attempts: number;
}

/** Every effect of `runId` (managed and unmanaged), in node order. Fine on a read-only store. */
export function listRunEffects(store: StateStore, runId: string): RunEffect[] {
  return queryAll<
    { node_id: string; effect_type: string; state: string; applied: number; attempts: number }
  >(
    store,
    "SELECT a.node_id, e.effect_type, e.state, " +
      "(SELECT COUNT(*) FROM effect_attempts x WHERE x.effect_id = e.effect_id " +
      "AND x.state = 'applied') AS applied, " +
      "(SELECT COUNT(*) FROM effect_attempts x WHERE x.effect_id = e.effect_id) AS attempts " +
      "FROM effects e JOIN node_attempts a ON a.attempt_id = e.attempt_id " +
      "WHERE e.run_id = :runId ORDER BY a.sequence, e.created_at, e.effect_id",
    { runId },
  ).map((row) => ({
    nodeId: row.node_id,
    effectType: row.effect_type,
    state: row.state,
    applied: row.applied,
    attempts: row.attempts,
  }));
}

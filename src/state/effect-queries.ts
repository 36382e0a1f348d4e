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

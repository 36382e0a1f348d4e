/**
 * The counts `host status` and `doctor` report: runs by state, active workers, expired claims,
 * pending interactions and ambiguous effects. Counts only: no ids, paths or payloads.
 */
import { fencedLeaseSql } from "./claims.ts";
import { type StateStore } from "./store.ts";
import { queryOne } from "./statements.ts";

export interface HostStatusCounts {
  queued: number;
  running: number;
  parked: number;
  waiting: number;
  paused: number;
  blocked: number;
  activeWorkers: number;
  expiredClaims: number;
  pendingInteractions: number;
  ambiguousEffects: number;
}

/** The count fields of a `host status` report, live or stopped (same shape for both). */
export interface HostStatusCountFields {
  runs: { queued: number; running: number; parked: number; waiting: number };
  expiredClaims: number;
  pendingInteractions: number;
  ambiguousEffects: number;
}

export function hostStatusCountFields(counts: HostStatusCounts): HostStatusCountFields {
  return {
    runs: {
      queued: counts.queued,
      running: counts.running,
      parked: counts.parked,
      waiting: counts.waiting,
    },
    expiredClaims: counts.expiredClaims,
    pendingInteractions: counts.pendingInteractions,
    ambiguousEffects: counts.ambiguousEffects,
  };
}

/** Counts for `host status` (no ids, paths or payloads). */
export function hostStatusCounts(store: StateStore, now = store.clock.now()): HostStatusCounts {
  const runs = queryOne<
    Omit<
      HostStatusCounts,
      "activeWorkers" | "expiredClaims" | "pendingInteractions" | "ambiguousEffects"
    >
  >(
    store,
    "SELECT COALESCE(SUM(r.state = 'queued'), 0) AS queued, " +
      "COALESCE(SUM(r.state = 'running' AND q.state IN ('starting', 'running')), 0) AS running, " +
      "COALESCE(SUM(r.state = 'running' AND q.state = 'parked'), 0) AS parked, " +
      "COALESCE(SUM(r.state = 'waiting'), 0) AS waiting, " +
      "COALESCE(SUM(r.paused = 1 AND r.state IN ('queued', 'running', 'waiting')), 0) AS paused, " +
      "COALESCE(SUM(r.blocked_reason IS NOT NULL AND r.state IN ('queued', 'running')), 0) AS blocked " +
      "FROM runs r JOIN run_queue q ON q.run_id = r.run_id " +
      "WHERE r.state IN ('queued', 'running', 'waiting')",
  )!;
  const count = (sql: string, params: Record<string, number> = {}) =>
    queryOne<{ n: number }>(store, sql, params)!.n;
  return {
    ...runs,
    activeWorkers: count(
      "SELECT COUNT(*) AS n FROM run_workers WHERE status IN ('starting', 'live')",
    ),
    expiredClaims: count(
      "SELECT COUNT(*) AS n FROM leases l WHERE token_hash IS NOT NULL AND (expires_at <= :now " +
        `OR ${fencedLeaseSql("l")})`,
      { now },
    ),
    pendingInteractions: count(
      "SELECT (SELECT COUNT(*) FROM interactive_requests WHERE status = 'pending') + " +
        "(SELECT COUNT(*) FROM human_decisions WHERE state = 'pending') AS n",
    ),
    // A run being pruned is gone (run-marks.ts), though its rows go in batches.
    ambiguousEffects: count(
      "SELECT COUNT(*) AS n FROM effects WHERE state = 'ambiguous' AND run_id NOT IN " +
        "(SELECT run_id FROM run_prunes)",
    ),
  };
}

/**
 * What keeps an ended run past its retention period: something else still points at it. Each
 * reference is one SQL clause over the run aliased `r`, true while the reference holds; a prune
 * takes only runs for which none holds, checked again inside the transaction that deletes them,
 * so a reference made meanwhile (a fork, a controller request) keeps the run.
 */
export interface RunReference {
  /** Names the reference in reports. */
  name: string;
  /** True while the run aliased `r` is referenced. */
  sql: string;
  /**
   * A reference another run holds: the ids of the runs holding it (`?1`: this run's id). It
   * goes once they are pruned: a dry run, which deletes nothing, counts ahead with it.
   */
  referrers?: string;
}

export const RUN_REFERENCES: readonly RunReference[] = [
  {
    // A run started from this one (`parent_run_id`) that still exists: the child's row points
    // at it. The parent goes once its children are gone.
    name: "childRun",
    sql: "EXISTS (SELECT 1 FROM runs c WHERE c.parent_run_id = r.run_id)",
    referrers: "SELECT run_id FROM runs WHERE parent_run_id = ?1",
  },
  {
    // A fork of this run (`run.rerun`) that still exists: it names the run, the parent's attempt
    // it reruns, and its adopted attempts copy the parent's (`adopted_from_attempt_id`).
    name: "fork",
    sql: "EXISTS (SELECT 1 FROM runs f WHERE f.forked_from_run_id = r.run_id)",
    referrers: "SELECT run_id FROM runs WHERE forked_from_run_id = ?1",
  },
  {
    // The current run of a controller's child workflow request: the controller reads it on every
    // reconcile. A removed resource's requests no longer count (its tombstone keeps no runs).
    name: "controller",
    sql: "EXISTS (SELECT 1 FROM controller_workflow_requests w JOIN controller_resources cr " +
      "ON cr.uid = w.uid WHERE w.run_id = r.run_id AND cr.removed_at IS NULL)",
  },
];

/** SQL: true when no reference holds the run aliased `r`. */
export function unreferencedSql(): string {
  return RUN_REFERENCES.map((ref) => `NOT ${ref.sql}`).join(" AND ");
}

/**
 * SQL: the run aliased `r` is held only by references other runs hold (at least one holds, and
 * none held by anything else): it goes once those runs are gone (a dry run's later walks).
 */
export function heldOnlyByRunsSql(): string {
  const byRuns = RUN_REFERENCES.filter((ref) => ref.referrers !== undefined);
  const others = RUN_REFERENCES.filter((ref) => ref.referrers === undefined);
  return [
    ...others.map((ref) => `NOT ${ref.sql}`),
    `(${byRuns.map((ref) => ref.sql).join(" OR ")})`,
  ].join(" AND ");
}

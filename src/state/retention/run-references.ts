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
}

export const RUN_REFERENCES: readonly RunReference[] = [
  {
    // A run started from this one (`parent_run_id`) that still exists: the child's row points
    // at it. The parent goes once its children are gone.
    name: "childRun",
    sql: "EXISTS (SELECT 1 FROM runs c WHERE c.parent_run_id = r.run_id)",
  },
  {
    // A fork of this run (`run.rerun`) that still exists: it names the run, the parent's attempt
    // it reruns, and its adopted attempts copy the parent's (`adopted_from_attempt_id`).
    name: "fork",
    sql: "EXISTS (SELECT 1 FROM runs f WHERE f.forked_from_run_id = r.run_id)",
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

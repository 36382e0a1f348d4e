/**
 * Definition snapshots no run uses any more. `workflow_definitions` keeps one graph per
 * definition digest for viewers and `run.status --definition`; once the last run of a digest is
 * pruned (or moved to another digest by a source acceptance) nothing reads it. A schedule's
 * last resolved digest keeps its snapshot too (the failed run of a firing whose workflow no
 * longer loads names it).
 *
 * Safe against a start at any moment: a run and its definition row are written in one
 * transaction (`enqueueRun`, `acceptSourceInTx`; insert-or-keep), and a deleting transaction
 * checks "no run names it" inside itself, so a start commits either before the delete (its run
 * keeps the row) or after it (its insert writes the row again).
 */
import { executeArgs, queryOneArgs } from "../statements.ts";
import type { StateStore } from "../store.ts";

const UNUSED = "SELECT d.definition_digest FROM workflow_definitions d WHERE " +
  "NOT EXISTS (SELECT 1 FROM runs r WHERE r.definition_digest = d.definition_digest) AND " +
  "NOT EXISTS (SELECT 1 FROM schedules s WHERE s.definition_digest = d.definition_digest)";

/** Deletes up to `limit` unused definition snapshots; returns how many went. */
export function pruneUnusedDefinitionsInTx(store: StateStore, limit: number): number {
  return executeArgs(
    store,
    `DELETE FROM workflow_definitions WHERE definition_digest IN (${UNUSED} LIMIT ?1)`,
    limit,
  );
}

/**
 * How many definition snapshots a pass would delete, and their stored bytes (a dry run): those
 * whose runs are all among `pruned` (the runs the dry run counted) and that no schedule names.
 */
export function countUnusedDefinitions(
  store: StateStore,
  pruned: ReadonlySet<string>,
): { n: number; bytes: number } {
  const row = queryOneArgs<{ n: number; bytes: number | null }>(
    store,
    "SELECT COUNT(*) AS n, SUM(length(snapshot_json) + length(definition_digest) + 60) AS bytes " +
      "FROM workflow_definitions d WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE " +
      "r.definition_digest = d.definition_digest AND r.run_id NOT IN (SELECT value FROM " +
      "json_each(?1))) AND " +
      "NOT EXISTS (SELECT 1 FROM schedules s WHERE s.definition_digest = d.definition_digest)",
    JSON.stringify([...pruned]),
  );
  return { n: row?.n ?? 0, bytes: row?.bytes ?? 0 };
}

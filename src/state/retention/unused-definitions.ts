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
import { executeArgs, queryAllArgs, queryOneArgs } from "../statements.ts";
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

/** A definition snapshot as a dry run looks at it. */
export interface DefinitionRow {
  digest: string;
  /** An estimate of its stored bytes. */
  bytes: number;
  /** A schedule names it (kept). */
  scheduled: boolean;
}

/** A dry run: the next `limit` definition snapshots after `after`, in digest order. */
export function listDefinitions(store: StateStore, after: string, limit: number): DefinitionRow[] {
  return queryAllArgs<{ digest: string; bytes: number; scheduled: number }>(
    store,
    "SELECT d.definition_digest AS digest, length(d.snapshot_json) + " +
      "length(d.definition_digest) + 60 AS bytes, EXISTS (SELECT 1 FROM schedules s WHERE " +
      "s.definition_digest = d.definition_digest) AS scheduled FROM workflow_definitions d " +
      "WHERE d.definition_digest > ?1 ORDER BY d.definition_digest LIMIT ?2",
    after,
    limit,
  ).map((row) => ({ digest: row.digest, bytes: row.bytes, scheduled: row.scheduled === 1 }));
}

/**
 * A dry run: whether the prune would delete the snapshot, whose runs the dry run counted
 * `counted` of (those the prune would delete first). It would when no schedule names it and no
 * other run does: the runs naming it are counted up to one past `counted` (an index range, never
 * more than the digest's runs).
 */
export function wouldBeUnused(store: StateStore, row: DefinitionRow, counted: number): boolean {
  if (row.scheduled) return false;
  const named = queryOneArgs<{ n: number }>(
    store,
    "SELECT COUNT(*) AS n FROM (SELECT 1 FROM runs WHERE definition_digest = ?1 LIMIT ?2)",
    row.digest,
    counted + 1,
  )?.n ?? 0;
  return named <= counted;
}

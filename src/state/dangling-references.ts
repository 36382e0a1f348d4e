/**
 * Doctor's `danglingReference`: rows that point at a missing row (SQLite's foreign-key check,
 * which a prune's deletions skip), except the remaining rows of a run being pruned: its `runs`
 * row goes first, with the mark, and its other rows after it in bounded transactions
 * (retention/run-marks.ts), so until the last of them they point at a run that is gone.
 */

/**
 * The tables whose rows a marked run may still have, named by their `run_id` (their children
 * point at them, and they go first, so only these can point at a missing row meanwhile).
 */
export const MARKED_RUN_TABLES: readonly string[] = [
  "run_workers",
  "interactive_requests",
  "human_decisions",
  "effects",
  "notifications",
  "turn_intents",
  "node_updates",
  "node_attempts",
  "events",
  "leases",
  "run_environments",
  "run_bindings",
  "run_queue",
];

const MARKED = "SELECT run_id FROM run_prunes";

/** SQL: up to 20 dangling rows (run_id NULL, child, parent, row), a marked run's left out. */
export function danglingReferenceSql(): string {
  const list = MARKED_RUN_TABLES.map((t) => `'${t}'`).join(", ");
  return [
    'SELECT NULL AS run_id, "table" AS child, parent, rowid AS row FROM ' +
    `pragma_foreign_key_check WHERE "table" NOT IN (${list})`,
    ...MARKED_RUN_TABLES.map((t) =>
      `SELECT NULL AS run_id, '${t}' AS child, fk.parent, fk.rowid AS row FROM ` +
      `pragma_foreign_key_check('${t}') fk WHERE NOT EXISTS (SELECT 1 FROM ${t} x WHERE ` +
      `x.rowid = fk.rowid AND x.run_id IN (${MARKED}))`
    ),
  ].join(" UNION ALL ") + " LIMIT 20";
}

/** SQL: the runs being pruned (a check's violations naming one are left out). */
export const MARKED_RUNS_SQL = MARKED;

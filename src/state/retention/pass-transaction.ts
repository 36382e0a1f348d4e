/** The settings a prune transaction runs under (foreign-key enforcement, commit sync). */
import type { StateStore } from "../store.ts";
import { pragmaNumber } from "./database-pages.ts";

/**
 * Runs a prune transaction with SQLite's foreign-key enforcement off and its commit not synced.
 *
 * Foreign keys: deleting a run (or an attempt) makes SQLite look for rows still pointing at it
 * in every referencing table, and the ones without an index on the referencing column
 * (events.run_id, node_updates.attempt_id, node_attempts.adopted_from_attempt_id,
 * runs.forked_from_attempt_id, ...) are scanned whole: 90 ms per run at 3,000 runs, growing with
 * the history. An index on each would cost every event and update append a B-tree write. The
 * prune needs none of those checks: it deletes a run only when nothing outside it points at it
 * (run-references.ts, checked in the same transaction) and every row the run owns with it,
 * children first (RUN_OWNED); doctor's `danglingReference` checks `foreign_key_check`.
 *
 * Sync: the commit's fsync was most of a prune transaction's lock hold on a loaded disk. At
 * `synchronous=NORMAL` a WAL commit survives a crash of the process, and the next synced commit
 * (any host write between two steps, at the latest the pass's next phase, before the host
 * removes the pruned runs' files) syncs it with its own: only a power loss before then can take
 * the newest deletions back, which leaves those runs whole for the next pass.
 *
 * Both pragmas only take effect outside a transaction, so inside one (a caller's) the host's
 * settings simply stay.
 */
export function asPruneTransaction<T>(store: StateStore, fn: () => T): T {
  if (store.db.isTransaction) return fn();
  const sync = pragmaNumber(store, "synchronous");
  store.db.exec("PRAGMA foreign_keys = OFF");
  store.db.exec("PRAGMA synchronous = NORMAL");
  try {
    return fn();
  } finally {
    store.db.exec(`PRAGMA synchronous = ${sync}`);
    store.db.exec("PRAGMA foreign_keys = ON");
  }
}

/** The settings a retention pass's write transactions run under (commit sync, foreign keys). */
import type { StateStore } from "../store.ts";
import { settleConnection, withConnectionSetting } from "../transactions.ts";

/**
 * Runs one write transaction of the pass with its commit not synced (`synchronous=NORMAL`) and,
 * for a prune's deletions (`checkForeignKeys: false`), SQLite's foreign-key enforcement off. The
 * host's settings are back when it returns.
 *
 * Sync: the commit's fsync was most of a pass transaction's lock hold on a loaded disk (a vacuum
 * step's too). Every transaction of a pass is work on ended data that the next pass would redo:
 * deleting runs, clearing receipts of ended runs, trimming the feed, moving free pages. In WAL mode
 * `synchronous=NORMAL` keeps the database consistent at a power loss and only the newest commits
 * can be lost, which leaves those runs whole (or their pages free) for the next pass; a crash of
 * the process loses nothing. The host's own writes (run state, receipts) keep `synchronous=FULL`:
 * the pragma is the connection's, set only around the pass's transaction, and the host's next
 * synced commit (or the pass's checkpoints, which end with an fsync of the WAL, at the latest
 * the one that ends the pass, before the host removes the pruned runs' files) makes the pass's commits durable with it.
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
 * Both pragmas only take effect outside a transaction, so inside one (a caller's) the host's
 * settings simply stay.
 */
export function asPassTransaction<T>(
  store: StateStore,
  options: { checkForeignKeys: boolean },
  fn: () => T,
): T {
  // A transaction a failed ROLLBACK left open is not a caller's: it goes first.
  settleConnection(store);
  if (store.db.isTransaction) return fn();
  // Settings put back before the host's next write even if a ROLLBACK left a transaction open.
  const synced = () => withConnectionSetting(store, "synchronous", () => 1, fn);
  return options.checkForeignKeys
    ? synced()
    : withConnectionSetting(store, "foreign_keys", () => 0, synced);
}

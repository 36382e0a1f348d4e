/**
 * When the last retention pass ended, kept in `meta`: the host starts its idle pass at most once
 * per interval across its own restarts too (a host started on demand exits after five idle
 * minutes, and each new one would otherwise run a pass at its first quiet tick).
 */
import { executeArgs, queryOneArgs } from "../statements.ts";
import type { StateStore } from "../store.ts";
import { writeTransaction } from "../transactions.ts";

const LAST_PASS_KEY = "retention.last_pass_at";

/** When the last complete pass ended (epoch ms), or null: none yet. */
export function readLastPassAt(store: StateStore): number | null {
  const row = queryOneArgs<{ value: string }>(
    store,
    "SELECT value FROM meta WHERE key = ?1",
    LAST_PASS_KEY,
  );
  const at = Number(row?.value);
  return row && Number.isSafeInteger(at) ? at : null;
}

/** Records that a complete pass ended at `at` (one small write transaction). */
export function recordPassEnd(store: StateStore, at: number): void {
  writeTransaction(store, () => {
    executeArgs(
      store,
      "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = ?2",
      LAST_PASS_KEY,
      String(at),
    );
  });
}

/**
 * What only a live run needs, dropped once the run has ended and no retry can come: the
 * per-message worker receipts in its events (request id, fingerprint, answer). Runs are compacted
 * in the order they ended, from a watermark kept in `meta`; events themselves (type, payload,
 * time), attempts, updates, decisions, effects, notifications, turns and client receipts stay for
 * status, the viewer and command replays until the prune, and so do the worker epochs
 * (`run_workers`): they name the run's captured output files (`workers/<epoch>.out`, ...), which
 * the prune removes with the run. A child group of an ended epoch stays too: the epoch's end
 * removed every group it stopped, so one left is a group whose stop gave up, which the next
 * host's recovery stops by it. Also here, by age: the oldest viewer deltas (a change feed; a viewer behind the oldest
 * reloads) and client receipts that name no run.
 */
import { executeArgs, queryAllArgs, queryOneArgs } from "../statements.ts";
import type { StateStore } from "../store.ts";

const WATERMARK_KEY = "retention.compacted_through";

export interface EndedRun {
  runId: string;
  runNo: number;
  finishedAt: number;
  rowid: number;
}

/** The position of the last compacted run in (finished_at, rowid) order. */
export function readCompactionWatermark(store: StateStore): { at: number; rowid: number } {
  const row = queryOneArgs<{ value: string }>(
    store,
    "SELECT value FROM meta WHERE key = ?1",
    WATERMARK_KEY,
  );
  const [at, rowid] = (row?.value ?? "0:0").split(":").map(Number);
  return { at: at || 0, rowid: rowid || 0 };
}

/** Ended runs after the watermark that ended before `before`, oldest first. */
export function listUncompactedRuns(store: StateStore, before: number, limit: number): EndedRun[] {
  const mark = readCompactionWatermark(store);
  return queryAllArgs<{ run_id: string; run_no: number; finished_at: number; rid: number }>(
    store,
    "SELECT r.run_id, r.run_no, r.finished_at, r.rowid AS rid FROM runs r " +
      "WHERE r.finished_at IS NOT NULL AND r.finished_at < ?1 AND " +
      "(r.finished_at > ?2 OR (r.finished_at = ?2 AND r.rowid > ?3)) " +
      "ORDER BY r.finished_at, r.rowid LIMIT ?4",
    before,
    mark.at,
    mark.rowid,
    limit,
  ).map((r) => ({ runId: r.run_id, runNo: r.run_no, finishedAt: r.finished_at, rowid: r.rid }));
}

/**
 * Compacts one ended run inside the caller's transaction and moves the watermark past it.
 * Returns the rows it changed.
 */
export function compactRunInTx(store: StateStore, run: EndedRun): number {
  const rows = executeArgs(
    store,
    "UPDATE events SET request_id = NULL, request_fingerprint = NULL, receipt_json = NULL " +
      "WHERE event_key BETWEEN ?1 * 4294967296 AND ?1 * 4294967296 + 4294967295 AND " +
      "request_id IS NOT NULL",
    run.runNo,
  );
  executeArgs(
    store,
    "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = ?2",
    WATERMARK_KEY,
    `${run.finishedAt}:${run.rowid}`,
  );
  return rows;
}

/**
 * Deletes up to `limit` of the oldest viewer deltas older than `before`, never the newest
 * delta (its revision keeps the feed's numbering growing). Returns how many went.
 */
export function trimViewerFeedInTx(store: StateStore, before: number, limit: number): number {
  const rows = queryAllArgs<{ revision: number; at: number }>(
    store,
    "SELECT revision, at FROM viewer_deltas ORDER BY revision LIMIT ?1",
    limit + 1,
  );
  // The feed is in commit order; it stops at the first delta that is young enough.
  let last = -1;
  for (let i = 0; i < rows.length - 1 && rows[i].at < before; i++) last = rows[i].revision;
  if (last < 0) return 0;
  return executeArgs(store, "DELETE FROM viewer_deltas WHERE revision <= ?1", last);
}

/** Deletes up to `limit` client receipts of no run completed before `before`. */
export function pruneRunlessReceiptsInTx(store: StateStore, before: number, limit: number): number {
  return executeArgs(
    store,
    "DELETE FROM host_commands WHERE request_id IN (SELECT request_id FROM host_commands " +
      "WHERE run_id IS NULL AND completed_at < ?1 ORDER BY completed_at LIMIT ?2)",
    before,
    limit,
  );
}

/** Counts client receipts of no run completed before `before` (a dry run). */
export function countRunlessReceipts(store: StateStore, before: number): number {
  return queryOneArgs<{ n: number }>(
    store,
    "SELECT COUNT(*) AS n FROM host_commands WHERE run_id IS NULL AND completed_at < ?1",
    before,
  )?.n ?? 0;
}

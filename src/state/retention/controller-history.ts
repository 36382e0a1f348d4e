/**
 * Controller history past the retention period: `controller_events` and the ended epochs of
 * `controller_workers`, which a controller writes at every reconcile and worker start (one
 * resource reconciled once a minute: ~4,000 rows a day) and nothing else removes. Kept: each
 * resource's newest `KEPT_EVENTS` events (what status shows, and the highest version
 * `resourceVersionRegressed` compares), all of a resource removed before the period excepted; each
 * controller's newest epoch, and every epoch still starting or live. The resources themselves stay
 * (tombstones: effects, child requests and runs name them).
 *
 * Each table is walked from its front by rowid (events and epochs are appended in time order) up
 * to the first page with no row older than the period, a page of rows a statement. Pages with
 * nothing to delete are walked past with reads only (the rows kept stay at the front, so a pass
 * with nothing new to delete writes nothing); from one that has, pages within the step budget a
 * write transaction (a dry run counts a page a step instead). The delete triggers allow a delete
 * only while the transaction holds its `controller_prunes` row (schema.sql).
 */
import { addRows } from "./run-deletion.ts";
import { executeArgs, queryAllArgs, queryOneArgs } from "../statements.ts";
import type { PassContext, PassPhase } from "./pass-context.ts";

/** Events per resource always kept: `controller get` shows the newest 20. */
export const KEPT_EVENTS = 20;
/** Rows of a table looked at per statement. */
const PAGE = 200;

interface HistoryTable {
  table: "controller_events" | "controller_workers";
  /** The row key the walk follows, and the time no row after the period's end precedes. */
  key: string;
  since: string;
  /** Of the rows with `key` in (?1, ?2]: those to delete (`?3` the cutoff). */
  prunable: string;
  /** A dry run's estimate of a row's stored bytes. */
  bytes: string;
  /** Names the files of each deleted row (captured output, by worker epoch). */
  returning?: string;
}

const EVENTS: HistoryTable = {
  table: "controller_events",
  key: "event_id",
  since: "at",
  prunable: "event_id > ?1 AND event_id <= ?2 AND at < ?3 AND (event_id < (SELECT n.event_id " +
    "FROM controller_events n WHERE n.uid = controller_events.uid ORDER BY n.event_id DESC " +
    `LIMIT 1 OFFSET ${KEPT_EVENTS - 1}) OR EXISTS (SELECT 1 FROM controller_resources r ` +
    "WHERE r.uid = controller_events.uid AND r.removed_at < ?3))",
  bytes: "length(uid) + length(type) + length(payload_json) + 40",
};

const WORKERS: HistoryTable = {
  table: "controller_workers",
  key: "rowid",
  // An epoch is recorded at its start: one started after the cutoff cannot have ended before.
  since: "started_at",
  // The newest epoch of its controller has the highest rowid (never reused: it is never deleted).
  prunable: "rowid > ?1 AND rowid <= ?2 AND status NOT IN ('starting', 'live') AND " +
    "finished_at < ?3 AND rowid < (SELECT MAX(n.rowid) FROM controller_workers n WHERE " +
    "n.controller_id = controller_workers.controller_id)",
  bytes: "length(worker_epoch) + length(controller_id) + length(source_digest) + " +
    "coalesce(length(start_identity), 0) + 60",
  returning: "worker_epoch",
};

/**
 * The next page of a walk: up to its last row older than the period. Rows are appended in time
 * order, so the young ones are the table's tail, and the walk ends at the first page with no old
 * row; a young row between old ones (a row written while the clock ran ahead) is walked past
 * (`prunable` leaves it), so it cannot stall the walk until the clock passes it.
 */
function nextPage(
  ctx: PassContext,
  t: HistoryTable,
  after: number,
): { end: number; last: boolean } {
  const rows = queryAllArgs<{ k: number; t: number }>(
    ctx.store,
    `SELECT ${t.key} AS k, ${t.since} AS t FROM ${t.table} WHERE ${t.key} > ?1 ORDER BY ${t.key} ` +
      "LIMIT ?2",
    after,
    PAGE,
  );
  let end = after;
  for (const row of rows) if (row.t < ctx.cutoff) end = row.k;
  return { end, last: end === after || rows.length < PAGE };
}

/** Deletes a page's prunable rows (inside the pass's transaction); returns how many went. */
function deletePage(ctx: PassContext, t: HistoryTable, after: number, end: number): number {
  const sql = `DELETE FROM ${t.table} WHERE ${t.prunable}`;
  if (t.returning === undefined) return executeArgs(ctx.store, sql, after, end, ctx.cutoff);
  const names = queryAllArgs<{ name: string }>(
    ctx.store,
    `${sql} RETURNING ${t.returning} AS name`,
    after,
    end,
    ctx.cutoff,
  );
  for (const { name } of names) ctx.pruned.epochs.push(name);
  return names.length;
}

/** A dry run: counts a page's prunable rows and their bytes. */
function countPage(ctx: PassContext, t: HistoryTable, after: number, end: number): void {
  const row = queryOneArgs<{ n: number; b: number | null }>(
    ctx.store,
    `SELECT COUNT(*) AS n, SUM(${t.bytes}) AS b FROM ${t.table} WHERE ${t.prunable}`,
    after,
    end,
    ctx.cutoff,
  );
  addRows(ctx.report.rows, t.table, row?.n ?? 0);
  ctx.report.bytes += row?.b ?? 0;
}

/** Whether a page holds a prunable row (a read: a page with none needs no write transaction). */
function anyPrunable(ctx: PassContext, t: HistoryTable, after: number, end: number): boolean {
  return queryOneArgs<{ n: number }>(
    ctx.store,
    `SELECT EXISTS (SELECT 1 FROM ${t.table} WHERE ${t.prunable}) AS n`,
    after,
    end,
    ctx.cutoff,
  )?.n === 1;
}

export function createControllerHistoryPhase(ctx: PassContext): PassPhase {
  const tables = [EVENTS, WORKERS];
  let current = 0;
  let cursor = 0;
  /** The current table's next page, read but not yet worked on. */
  let pending: { end: number; last: boolean } | null = null;
  /** One page of the current table; true once its walk is over. */
  const page = (work: (t: HistoryTable, after: number, end: number) => void): boolean => {
    const t = tables[current]!;
    const { end, last } = pending ?? nextPage(ctx, t, cursor);
    pending = null;
    if (end > cursor) work(t, cursor, end);
    cursor = end;
    if (!last) return false;
    current++;
    cursor = 0;
    return true;
  };
  /**
   * Walks past the pages with nothing to delete, reading only, within the step budget (a page
   * at least): true once one is left pending that has (a write transaction then deletes it).
   */
  const skipKept = (): boolean => {
    const started = performance.now();
    while (current < tables.length) {
      const t = tables[current]!;
      const next = nextPage(ctx, t, cursor);
      if (next.end > cursor && anyPrunable(ctx, t, cursor, next.end)) {
        pending = next;
        return true;
      }
      pending = next;
      page(() => {});
      if (performance.now() - started >= ctx.budgetMs) return false;
    }
    return false;
  };
  return {
    step() {
      if (current >= tables.length) return true;
      if (ctx.dryRun) {
        page((t, after, end) => countPage(ctx, t, after, end));
        return current >= tables.length;
      }
      if (!skipKept()) return current >= tables.length;
      ctx.transaction("controllers", () => {
        executeArgs(
          ctx.store,
          "INSERT INTO controller_prunes (id, before) VALUES (1, ?1)",
          ctx.cutoff,
        );
        const started = performance.now();
        try {
          // A page at least; more while the budget lasts, never past the current table's walk.
          while (
            !page((t, after, end) =>
              addRows(ctx.report.rows, t.table, deletePage(ctx, t, after, end))
            ) &&
            performance.now() - started < ctx.budgetMs
          ) { /* next page */ }
        } finally {
          executeArgs(ctx.store, "DELETE FROM controller_prunes");
        }
      });
      return current >= tables.length;
    },
  };
}

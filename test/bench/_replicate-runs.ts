/**
 * Grows a state database to a large history fast for the retention benchmark: a few template
 * runs are built through the real transitions (test/support/ended-runs.ts), then their rows are
 * copied with SQL, `INSERT ... SELECT`, into as many runs as asked. Every run-owned table the
 * prune deletes from (RUN_OWNED) is copied, plus the run's viewer deltas, so a copy is the same
 * rows a real run leaves, under new ids:
 * - every id column gets the copy's suffix (`-<k>`), so keys spread over the indexes the way
 *   distinct ids do;
 * - `run_no`, event keys, queue sequence numbers and delta revisions continue the database's
 *   own counters, in the order the copies "ran";
 * - every time column (`at`, `*_at`) moves by the copy's offset, so copy k of template i looks like
 *   run k * templates + i of a history with one run a second.
 * Building 100,000 runs through the transitions took many minutes; this takes seconds per 10,000.
 */
import type { StateStore } from "../../src/state/store.ts";
import { RUN_OWNED } from "../../src/state/retention/run-deletion.ts";

/** Columns that hold an id of a run or of something a run owns (unique per copy). */
const ID_COLUMNS = new Set([
  "run_id",
  "parent_run_id",
  "forked_from_run_id",
  "attempt_id",
  "source_attempt_id",
  "adopted_from_attempt_id",
  "approved_retry_attempt_id",
  "forked_from_attempt_id",
  "decision_id",
  "effect_id",
  "effect_key",
  "notification_id",
  "intent_id",
  "worker_epoch",
  "request_id",
  "submission_id",
  "accepted_submission_id",
  "idempotency_key",
  "resource",
  "origin_session_id",
  "target_session_id",
]);

/** Counter columns continued past the database's current maximum (template order). */
const COUNTERS: Record<string, string> = {
  runs: "run_no",
  run_queue: "enqueued_seq",
};

/** JSON columns that quote their run's id. */
const QUOTES_RUN: Record<string, string> = {
  events: "payload_json",
  viewer_deltas: "summary_json",
};

/** Copies per INSERT statement (one transaction each). */
const BATCH = 200;

export interface ReplicateOptions {
  /** The template runs (ended), in the order they ran; about `spacingMs` apart. */
  templates: string[];
  /** Runs wanted in all, templates included. */
  total: number;
  /** Time between two consecutive runs of the history (the templates' spacing). */
  spacingMs: number;
  /** Copy the templates' viewer deltas too (default true). */
  feed?: boolean;
}

function columns(store: StateStore, table: string): string[] {
  return (store.db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((
    c,
  ) => c.name);
}

function maxOf(store: StateStore, table: string, column: string): number {
  const row = store.db.prepare(`SELECT coalesce(MAX(${column}), 0) AS n FROM ${table}`).get() as {
    n: number;
  };
  return row.n;
}

/**
 * The SELECT list copying one row of `table` into copy `copy_k` of template `tpl_idx`. Uses the
 * join's columns: copy_k (1, 2, ...), tpl_idx (0-based), tpl_run_id, tpl_count, bases.
 */
function copyExpressions(store: StateStore, table: string): { cols: string[]; exprs: string[] } {
  const cols = columns(store, table);
  const ordinal = "(copy_k * tpl_count + tpl_idx)";
  const exprs = cols.map((col) => {
    const ref = `${table}.${col}`;
    if (COUNTERS[table] === col) return `base_${col} + ${ordinal} - tpl_count + 1`;
    if (table === "events" && col === "event_key") {
      return `(base_run_no + ${ordinal} - tpl_count + 1) * 4294967296 + ${table}.seq`;
    }
    if (QUOTES_RUN[table] === col) {
      return `replace(${ref}, '"' || tpl_run_id || '"', '"' || tpl_run_id || '-' || copy_k || '"')`;
    }
    if (ID_COLUMNS.has(col)) return `${ref} || '-' || copy_k`;
    if (col === "at" || col.endsWith("_at")) return `${ref} + copy_k * tpl_count * spacing`;
    return ref;
  });
  return { cols, exprs };
}

/**
 * Copies the templates until the database holds `total` runs of this shape. Runs with the
 * caller's pragmas (a fixture: `synchronous=OFF` is fine); one transaction per batch.
 */
export function replicateRuns(store: StateStore, opts: ReplicateOptions): void {
  const db = store.db;
  const count = opts.templates.length;
  const copies = Math.ceil(opts.total / count) - 1;
  if (copies <= 0) return;
  db.exec(
    "CREATE TEMP TABLE bench_templates (tpl_idx INTEGER PRIMARY KEY, tpl_run_id TEXT, tpl_run_no INTEGER)",
  );
  db.exec("CREATE TEMP TABLE bench_copies (copy_k INTEGER PRIMARY KEY)");
  const addTemplate = db.prepare(
    "INSERT INTO bench_templates SELECT ?1, run_id, run_no FROM runs WHERE run_id = ?2",
  );
  opts.templates.forEach((runId, i) => addTemplate.run(i, runId));
  // The templates' deltas, numbered 0, 1, ... in feed order (they are the whole feed so far).
  const deltaBase = maxOf(store, "viewer_deltas", "revision");
  const feedRows = db.prepare("SELECT COUNT(*) AS n, MIN(revision) AS first FROM viewer_deltas")
    .get() as { n: number; first: number };
  const deltas = feedRows.n;
  if (opts.feed !== false && deltas > 0 && feedRows.first !== deltaBase - deltas + 1) {
    throw new Error("replicateRuns: the viewer feed must be whole (the templates' deltas only)");
  }
  const bases = {
    base_run_no: maxOf(store, "runs", "run_no"),
    base_enqueued_seq: maxOf(store, "run_queue", "enqueued_seq"),
  };
  const params =
    `(SELECT ${bases.base_run_no} AS base_run_no, ${bases.base_enqueued_seq} AS base_enqueued_seq, ` +
    `${count} AS tpl_count, ${opts.spacingMs} AS spacing)`;
  // Parents before children, so every foreign key holds at each statement.
  const statements = [...RUN_OWNED].reverse().map((owned) => {
    const [table, where] = owned.rows.split(/ WHERE (.*)/s);
    const { cols, exprs } = copyExpressions(store, table);
    const cond = where.replaceAll("?1", owned.byRunNo ? "tpl_run_no" : "tpl_run_id");
    return db.prepare(
      `INSERT INTO ${table} (${cols.join(", ")}) SELECT ${exprs.join(", ")} ` +
        `FROM bench_copies, bench_templates, ${params}, ${table} WHERE ${cond} ` +
        `AND copy_k * tpl_count + tpl_idx < ${opts.total} ORDER BY copy_k, tpl_idx`,
    );
  });
  const feed = copyExpressions(store, "viewer_deltas");
  const copyFeed = db.prepare(
    `INSERT INTO viewer_deltas (${feed.cols.join(", ")}) SELECT ${
      feed.exprs.map((e, i) =>
        feed.cols[i] === "revision"
          ? `revision + copy_k * ${deltas}` // after the feed's end, in the templates' order
          : e
      ).join(", ")
    } FROM bench_copies, bench_templates, ${params}, viewer_deltas ` +
      `WHERE viewer_deltas.run_id = tpl_run_id AND viewer_deltas.revision <= ${deltaBase} ` +
      `AND copy_k * tpl_count + tpl_idx < ${opts.total} ORDER BY copy_k, viewer_deltas.revision`,
  );
  const addCopy = db.prepare("INSERT INTO bench_copies VALUES (?1)");
  for (let from = 1; from <= copies; from += BATCH) {
    db.exec("BEGIN");
    db.exec("DELETE FROM bench_copies");
    for (let k = from; k < Math.min(copies + 1, from + BATCH); k++) addCopy.run(k);
    for (const statement of statements) statement.run();
    if (opts.feed !== false) copyFeed.run();
    db.exec("COMMIT");
  }
  if (opts.feed === false) {
    // The feed a host keeps of runs that ended long ago: the trim leaves only its newest delta,
    // which is the newest run's.
    db.exec(
      "INSERT INTO viewer_deltas (run_id, run_revision, kind, summary_json, at) SELECT r.run_id, " +
        "(SELECT MAX(seq) FROM events WHERE event_key BETWEEN r.run_no * 4294967296 AND " +
        "r.run_no * 4294967296 + 4294967295), 'run.' || r.state, " +
        "json_object('state', r.state, 'queue', 'done'), r.finished_at FROM runs r " +
        "ORDER BY r.run_no DESC LIMIT 1",
    );
    db.exec("DELETE FROM viewer_deltas WHERE revision < (SELECT MAX(revision) FROM viewer_deltas)");
  }
  db.exec("DROP TABLE bench_templates");
  db.exec("DROP TABLE bench_copies");
}

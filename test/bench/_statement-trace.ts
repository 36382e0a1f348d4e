/**
 * What a slow write transaction of the retention pass did, statement by statement (the retention
 * benchmark's `--trace-ms`): each statement's verb and table, read from its SQL text (never a
 * bound value: no id, path or payload), the rows the pass counted deleted while it ran, and its
 * time, from its announcement (`store.beforeStatement`, the crash points' seam) to the next
 * statement's, so the JavaScript between two statements counts with the first. A statement
 * prepared for the first time in the transaction is marked (its preparation falls just before it,
 * in the previous statement's time); one SQLite prepares again inside its first step (expired by
 * a flag pragma such as `foreign_keys`) is not visible here.
 */
import type { StateStore } from "../../src/state/store.ts";

export interface TracedStatement {
  /** Verb and table, e.g. `DELETE node_attempts` (`BEGIN` until the first statement). */
  s: string;
  /** Statements of that kind in a row, merged. */
  n: number;
  rows: number;
  ms: number;
  /** The longest of them. */
  maxMs: number;
  /** How many were prepared for the first time in this transaction. */
  prepared?: number;
}

export interface StatementTrace {
  /** Call just before the transaction's BEGIN (outside its timed span). */
  begin(): void;
  /** Call once it ended: its statements, merged, when it took `ms` ≥ the threshold; else null. */
  end(ms: number): TracedStatement[] | null;
}

/** Statements kept a transaction (a prune's are ~40; a long one's tail is summed in the last). */
const MAX_ENTRIES = 256;

export function createStatementTrace(
  store: StateStore,
  rowsNow: () => number,
  thresholdMs: number,
): StatementTrace {
  const labels = new Map<string, string>();
  // Parallel arrays reused by every transaction: the trace allocates nothing per statement.
  const label: string[] = new Array(MAX_ENTRIES);
  const at = new Float64Array(MAX_ENTRIES + 1);
  const rows = new Float64Array(MAX_ENTRIES + 1);
  const fresh = new Uint8Array(MAX_ENTRIES);
  let n = 0;
  let open = false;
  let cached = 0;
  const mark = (s: string) => {
    if (n === MAX_ENTRIES) return; // the rest counts with the last
    label[n] = s;
    fresh[n] = store.statements.size > cached ? 1 : 0;
    cached = store.statements.size;
    at[n] = performance.now();
    rows[n] = rowsNow();
    n++;
  };
  store.beforeStatement = (sql) => {
    if (!open) return;
    let s = labels.get(sql);
    if (s === undefined) labels.set(sql, s = labelOf(sql));
    mark(s);
  };
  return {
    begin() {
      n = 0;
      open = true;
      cached = store.statements.size;
      mark("BEGIN");
    },
    end(ms) {
      open = false;
      if (ms < thresholdMs || n === 0) return null;
      at[n] = performance.now();
      rows[n] = rowsNow();
      const out: TracedStatement[] = [];
      for (let i = 0; i < n; i++) {
        const took = at[i + 1] - at[i];
        const deleted = rows[i + 1] - rows[i];
        const last = out[out.length - 1];
        if (last && last.s === label[i]) {
          last.n++;
          last.rows += deleted;
          last.ms += took;
          last.maxMs = Math.max(last.maxMs, took);
          if (fresh[i]) last.prepared = (last.prepared ?? 0) + 1;
        } else {
          out.push({
            s: label[i],
            n: 1,
            rows: deleted,
            ms: took,
            maxMs: took,
            ...(fresh[i] ? { prepared: 1 } : {}),
          });
        }
      }
      for (const entry of out) {
        entry.ms = Math.round(entry.ms * 1000) / 1000;
        entry.maxMs = Math.round(entry.maxMs * 1000) / 1000;
      }
      return out;
    },
  };
}

/** `DELETE node_attempts`, `SELECT runs`, `PRAGMA incremental_vacuum`, `COMMIT`. */
export function labelOf(sql: string): string {
  const verb = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? "?";
  const table = verb === "PRAGMA"
    ? /^\s*PRAGMA\s+(\w+)/i.exec(sql)?.[1]
    : (verb === "DELETE"
      ? /\bFROM\s+(\w+)/i
      : verb === "INSERT"
      ? /\bINTO\s+(\w+)/i
      : verb === "UPDATE"
      ? /^\s*UPDATE\s+(\w+)/i
      : /\bFROM\s+(\w+)/i).exec(sql)?.[1];
  return table === undefined ? verb : `${verb} ${table}`;
}

/**
 * Statements on the state store: every query and write goes through these, so statements are
 * prepared once per connection, crash points see each statement inside a transaction, and read
 * accounting (`store.readStats`) counts rows.
 */
import type { SQLInputValue, StatementSync } from "node:sqlite";
import type { ReadStats, StateStore } from "./store-handle.ts";

type Params = Record<string, SQLInputValue>;

/** The connection's cached prepared statement for `sql`. */
export function cachedStatement(store: StateStore, sql: string): StatementSync {
  let stmt = store.statements.get(sql);
  if (!stmt) {
    stmt = store.db.prepare(sql);
    store.statements.set(sql, stmt);
  }
  return stmt;
}

/** A cached statement, announced to `beforeStatement` (crash points) inside a transaction. */
export function prepared(store: StateStore, sql: string): StatementSync {
  const stmt = cachedStatement(store, sql);
  if (store.beforeStatement && store.db.isTransaction) store.beforeStatement(sql);
  return stmt;
}

/** Executes a write statement with named parameters (`:name`); returns the changed row count. */
export function execute(store: StateStore, sql: string, params: Params = {}): number {
  return Number(prepared(store, sql).run(params).changes);
}

/** First row of a query, or undefined. */
export function queryOne<T>(store: StateStore, sql: string, params: Params = {}): T | undefined {
  const row = prepared(store, sql).get(params) as T | undefined;
  if (store.readStats) countRead(store.readStats, row === undefined ? 0 : 1);
  return row;
}

/** All rows of a query. */
export function queryAll<T>(store: StateStore, sql: string, params: Params = {}): T[] {
  const rows = prepared(store, sql).all(params) as T[];
  if (store.readStats) countRead(store.readStats, rows.length);
  return rows;
}

function countRead(stats: ReadStats, rows: number): void {
  stats.statements++;
  stats.rows += rows;
}

/** Adds payload rows a query read to `store.readStats` (when accounting is on). */
export function countPayloadRows(store: StateStore, rows: number): void {
  if (store.readStats) store.readStats.payloadRows += rows;
}

/**
 * Positional variants (`?1`, `?2`...) for the protected-write hot path: binding an object by
 * parameter name costs about as much as a small statement's own work.
 */
export function executeArgs(store: StateStore, sql: string, ...args: SQLInputValue[]): number {
  return Number(prepared(store, sql).run(...args).changes);
}

/** First row of a query with positional parameters, or undefined. */
export function queryOneArgs<T>(
  store: StateStore,
  sql: string,
  ...args: SQLInputValue[]
): T | undefined {
  const row = prepared(store, sql).get(...args) as T | undefined;
  if (store.readStats) countRead(store.readStats, row === undefined ? 0 : 1);
  return row;
}

/** All rows of a query with positional parameters. */
export function queryAllArgs<T>(store: StateStore, sql: string, ...args: SQLInputValue[]): T[] {
  const rows = prepared(store, sql).all(...args) as T[];
  if (store.readStats) countRead(store.readStats, rows.length);
  return rows;
}

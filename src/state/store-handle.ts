/**
 * The shape of an open state store (store.ts opens one): its own file, so the statement and
 * transaction helpers that store.ts itself uses can name it without importing store.ts back.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { Clock, IdSource } from "../base/clock.ts";

export interface StateStore {
  readonly db: DatabaseSync;
  readonly clock: Clock;
  readonly ids: IdSource;
  /** Absolute path of `state.sqlite`. */
  readonly path: string;
  readonly readOnly: boolean;
  /** Prepared statements by SQL text. */
  readonly statements: Map<string, StatementSync>;
  /**
   * Test seam for crash injection: called before every statement of a write transaction
   * (including its COMMIT). Throwing from it aborts the transaction like a crash would.
   */
  beforeStatement: ((sql: string) => void) | null;
  /**
   * Called after every committed write transaction (the host uses it to wake long polls of Pi
   * sessions); must not throw or write.
   */
  afterCommit: (() => void) | null;
  /**
   * Read accounting for the viewer's bounded-read gate: when set, every query adds its
   * statement and rows, and payload readers (viewer-queries.ts) add their payload rows.
   */
  readStats: ReadStats | null;
}

export interface ReadStats {
  statements: number;
  rows: number;
  /** Rows that carried an output, decision request, update data or definition snapshot. */
  payloadRows: number;
}

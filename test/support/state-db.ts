/**
 * Read-only looks at a test's workflow database (node:sqlite, `readOnly`), and bounded polls on
 * it, so e2e tests assert on the durable rows the spec names rather than on process internals.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { waitFor } from "./wait.ts";

export type Row = Record<string, unknown>;

/** Runs one query on a fresh read-only connection (the host keeps writing meanwhile). */
export function queryState(stateDir: string, sql: string, ...params: (string | number)[]): Row[] {
  const db = new DatabaseSync(join(stateDir, "state.sqlite"), { readOnly: true });
  try {
    return db.prepare(sql).all(...params) as Row[];
  } finally {
    db.close();
  }
}

/** Polls `condition` (a query result check) until it holds or the deadline passes. */
export async function waitForState<T>(
  what: string,
  condition: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs = 30_000,
): Promise<T> {
  let lastError: unknown;
  return await waitFor(
    async () => {
      try {
        return await condition();
      } catch (error) {
        lastError = error; // The database may not exist yet, or be mid-checkpoint.
        return null;
      }
    },
    () => `${what}${lastError ? ` (last error: ${(lastError as Error).message})` : ""}`,
    timeoutMs,
    50,
  );
}

/** The run's state once it is one of `states`. */
export function waitForRunState(
  stateDir: string,
  runId: string,
  states: readonly string[],
  timeoutMs = 60_000,
): Promise<string> {
  return waitForState(`run ${runId} to be ${states.join("|")}`, () => {
    if (!existsSync(join(stateDir, "state.sqlite"))) return undefined;
    const [row] = queryState(stateDir, "SELECT state FROM runs WHERE run_id = ?", runId);
    const state = row?.state as string | undefined;
    return state && states.includes(state) ? state : undefined;
  }, timeoutMs);
}

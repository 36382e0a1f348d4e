/**
 * The recorded run environment (protocol/run-environment.ts). Written once by `enqueueRun`, read
 * only when the host launches a worker or resolver for the run, deleted by a trigger when the
 * run ends. Never part of a status, list, event or viewer query.
 */
import type { RunEnvironment } from "../protocol/run-environment.ts";
import { execute, queryOneArgs, type StateStore } from "./store.ts";
import { encodeValue } from "./values.ts";

/** Inside the enqueue transaction. */
export function insertRunEnvironment(
  store: StateStore,
  runId: string,
  environment: RunEnvironment,
): void {
  execute(store, "INSERT INTO run_environments (run_id, env_json) VALUES (:runId, :env)", {
    runId,
    env: encodeValue("environment", environment),
  });
}

/** The environment recorded for `runId`, or null when none was (or the run has ended). */
export function readRunEnvironment(store: StateStore, runId: string): RunEnvironment | null {
  const row = queryOneArgs<{ env_json: string }>(
    store,
    "SELECT env_json FROM run_environments WHERE run_id = ?1",
    runId,
  );
  return row ? (JSON.parse(row.env_json) as RunEnvironment) : null;
}

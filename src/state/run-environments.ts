/**
 * The recorded run environment (protocol/run-environment.ts). Written once by `enqueueRun`, read
 * only when the host launches a worker or resolver for the run, deleted by a trigger when the
 * run ends. Never part of a status, list, event or viewer query. Beside it, the names of the
 * run's provider credentials, whose values only the host's memory holds.
 */
import type { RunEnvironment } from "../protocol/run-environment.ts";
import { type StateStore } from "./store.ts";
import { execute, queryOneArgs } from "./statements.ts";
import { writeTransaction } from "./transactions.ts";
import { encodeValue } from "./values.ts";

/** Inside the enqueue transaction. */
export function insertRunEnvironment(
  store: StateStore,
  runId: string,
  environment: RunEnvironment,
  credentialNames: readonly string[] = [],
  runSecretNames: readonly string[] = [],
): void {
  execute(
    store,
    "INSERT INTO run_environments (run_id, env_json, credential_names_json, " +
      "run_secret_names_json) VALUES (:runId, :env, :names, :runNames)",
    {
      runId,
      env: encodeValue("environment", environment),
      names: JSON.stringify([...credentialNames].sort()),
      runNames: JSON.stringify([...runSecretNames].sort()),
    },
  );
}

/**
 * Names of the credentials the user named for the run (`--env NAME`): its workers get them too,
 * not only its Pi children. Empty when the run has ended.
 */
export function readRunSecretNames(store: StateStore, runId: string): string[] {
  const row = queryOneArgs<{ run_secret_names_json: string }>(
    store,
    "SELECT run_secret_names_json FROM run_environments WHERE run_id = ?1",
    runId,
  );
  return row ? (JSON.parse(row.run_secret_names_json) as string[]) : [];
}

/**
 * Names of the provider credentials the run's Pi children are to get; null when the run has
 * ended (or recorded no environment).
 */
export function readCredentialNames(store: StateStore, runId: string): string[] | null {
  const row = queryOneArgs<{ credential_names_json: string }>(
    store,
    "SELECT credential_names_json FROM run_environments WHERE run_id = ?1",
    runId,
  );
  return row ? (JSON.parse(row.credential_names_json) as string[]) : null;
}

/** Replaces the credential names of a live run (a resume decided which ones it runs with). */
export function recordCredentialNames(
  store: StateStore,
  runId: string,
  names: readonly string[],
): void {
  writeTransaction(store, () =>
    execute(
      store,
      "UPDATE run_environments SET credential_names_json = :names WHERE run_id = :runId",
      { runId, names: JSON.stringify([...names].sort()) },
    ));
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

/** `pi-workflows view [runId] [--once] [--all]`: the read-only terminal viewer (src/viewer). */
import { randomIds, systemClock } from "../base/clock.ts";
import { findRunsByIdPrefix } from "../state/run-find-queries.ts";
import {
  closeStateStore,
  damagedReadError,
  openStateStore,
  resolveStateDir,
} from "../state/store.ts";
import { runView } from "../viewer/view-app.ts";
import { EXIT } from "./exit-codes.ts";
import type { CliIo } from "./output.ts";
import type { CliCommand } from "./parse-command.ts";
import { findRunIdByPrefix, MAX_CANDIDATES, unknownRunMessage } from "./run-ids.ts";

export async function runViewCommand(
  command: Extract<CliCommand, { kind: "view" }>,
  env: NodeJS.ProcessEnv,
  io: CliIo,
): Promise<number> {
  const stateDir = resolveStateDir(env);
  // A prefix as every other command takes it, found in the database read-only (no host).
  const runId = command.runId === null ? null : await findRunId(stateDir, command.runId);
  if (runId === null && command.runId !== null) {
    io.err(unknownRunMessage(command.runId));
    return EXIT.refused;
  }
  return await runView(
    { stateDir, runId, all: command.all, once: command.once, filter: command.filter, env },
    { output: process.stdout, input: process.stdin },
  );
}

async function findRunId(stateDir: string, typed: string): Promise<string | null> {
  const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds, readOnly: true });
  try {
    return await findRunIdByPrefix(
      typed,
      (prefix) => findRunsByIdPrefix(store, prefix, MAX_CANDIDATES),
    );
  } catch (error) {
    throw damagedReadError(store.path, error) ?? error;
  } finally {
    closeStateStore(store);
  }
}

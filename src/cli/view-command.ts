/** `pi-workflows view [runId] [--once] [--all]`: the read-only terminal viewer (src/viewer). */
import { randomIds, systemClock } from "../state/clock.ts";
import { findRunsByIdPrefix } from "../state/run-find-queries.ts";
import { closeStateStore, openStateStore, resolveStateDir } from "../state/store.ts";
import { runView } from "../viewer/view-app.ts";
import { EXIT } from "./exit-codes.ts";
import type { CliIo } from "./output.ts";
import type { CliCommand } from "./parse-command.ts";
import { MAX_CANDIDATES, pickRunId, runIdPrefixes, unknownRunMessage } from "./run-ids.ts";

export async function runViewCommand(
  command: Extract<CliCommand, { kind: "view" }>,
  env: NodeJS.ProcessEnv,
  io: CliIo,
): Promise<number> {
  const stateDir = resolveStateDir(env);
  // A prefix as every other command takes it, found in the database read-only (no host).
  const runId = command.runId === null ? null : findRunId(stateDir, command.runId);
  if (runId === null && command.runId !== null) {
    io.err(unknownRunMessage(command.runId));
    return EXIT.refused;
  }
  return await runView(
    { stateDir, runId, all: command.all, once: command.once, env },
    { output: process.stdout, input: process.stdin },
  );
}

function findRunId(stateDir: string, typed: string): string | null {
  const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds, readOnly: true });
  try {
    const found: { runId: string; workflowName: string; state: string; createdAt: number }[] = [];
    let more = false;
    for (const prefix of runIdPrefixes(typed)) {
      const page = findRunsByIdPrefix(store, prefix, MAX_CANDIDATES);
      found.push(...page.runs);
      more ||= page.more;
    }
    return pickRunId(typed, found, more);
  } finally {
    closeStateStore(store);
  }
}

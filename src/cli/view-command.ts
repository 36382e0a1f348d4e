/** `pi-workflows view [runId] [--once] [--all]`: the read-only terminal viewer (src/viewer). */
import { resolveStateDir } from "../state/store.ts";
import { runView } from "../viewer/view-app.ts";
import type { CliCommand } from "./parse-command.ts";

export function runViewCommand(
  command: Extract<CliCommand, { kind: "view" }>,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  return runView(
    {
      stateDir: resolveStateDir(env),
      runId: command.runId,
      all: command.all,
      once: command.once,
      env,
    },
    { output: process.stdout, input: process.stdin },
  );
}

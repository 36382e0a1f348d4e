/**
 * The end-to-end smoke scenario shared by the binary, Deno and Node 22 smokes. It drives the
 * real CLI as a user would, in a temp directory with a clean environment, through the phases in
 * scenario-phases.ts:
 *
 * 1. `--version`; `host start`; `host status --json` says running with an epoch;
 * 2. `start hello.workflow.ts --wait` (a compute, a shell node and a relative import) completes,
 *    and `status --json` shows every node ok; a workflow importing `pi-workflows` completes; a
 *    missing workflow file is refused on one line;
 * 3. a slower run: its worker is SIGKILLed in the middle of a pure compute step, and the host
 *    recovers the run in a new worker and completes it; only workers loaded workflow code;
 * 4. another run is paused (its worker stops), resumed and cancelled; `list --all` shows all;
 * 5. `host stop`; no process of the smoke is left; `doctor` is clean; no runtime warnings.
 *
 * Processes of this smoke are recognised by its private HOME in their environment;
 * the `finally` SIGKILLs any that are left, by PID.
 */
import { join } from "node:path";
import { type CommandResult, killAll, processesWithEnv, runCommand } from "./processes.ts";
import { SCENARIO_PHASES, type SmokeContext } from "./scenario-phases.ts";
import type { ScenarioReport, SmokeDir } from "./smoke-dir.ts";

export { finish, makeSmokeDir, packageVersion, removeSmokeDir, REPO_ROOT } from "./smoke-dir.ts";

export interface ScenarioOptions {
  label: string;
  dir: SmokeDir;
  /** The program and the arguments that come before the CLI arguments. */
  command: string;
  prefixArgs: string[];
  /** The executable every host and worker process must be (`/proc/PID/exe`). */
  expectedExe: string;
  /** Added to the clean environment (PATH, HOME, state and agent dirs). */
  extraEnv?: Record<string, string>;
  expectedVersion: string;
}

const COMMAND_TIMEOUT_MS = 60_000;

export async function runScenario(options: ScenarioOptions): Promise<ScenarioReport> {
  const { dir } = options;
  const env: Record<string, string> = {
    PATH: "/usr/bin:/bin",
    HOME: dir.home,
    PI_WORKFLOWS_STATE_DIR: dir.stateDir,
    PI_CODING_AGENT_DIR: join(dir.home, "agent"),
    ...options.extraEnv,
  };
  // Workers get the run environment, not the host's: HOME (private to this smoke) is in both.
  const marker = `HOME=${dir.home}`;
  const report: ScenarioReport = { label: options.label, ok: false, steps: [] };
  const stderrSeen: string[] = [];
  const cli = async (args: string[]): Promise<CommandResult> => {
    const result = await runCommand(options.command, [...options.prefixArgs, ...args], {
      cwd: dir.project,
      env,
      timeoutMs: COMMAND_TIMEOUT_MS,
    });
    stderrSeen.push(result.stderr);
    return result;
  };
  const ctx: SmokeContext = {
    dir,
    expectedExe: options.expectedExe,
    expectedVersion: options.expectedVersion,
    report,
    stderrSeen,
    cli,
    ours: () => processesWithEnv(marker),
    host: null,
  };
  try {
    for (const phase of SCENARIO_PHASES) await phase(ctx);
    report.ok = true;
  } catch (error) {
    report.error = error instanceof Error ? error.message : String(error);
  } finally {
    killAll(ctx.ours());
  }
  return report;
}

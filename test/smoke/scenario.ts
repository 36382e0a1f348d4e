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
 * 4. `start two-turn-agent.workflow.ts --wait` runs two agent steps headless with the real Pi
 *    (`pi` found on PATH: a wrapper starting the devDependency) against the fake model;
 * 5. another run is paused (its worker stops), resumed and cancelled; `list --all` shows all;
 * 6. `prune` runs its checkpoints on their own thread (its host log line says so);
 * 7. `host stop`; no process of the smoke is left; `doctor` is clean; no runtime warnings.
 *
 * Processes of this smoke are recognised by its private HOME in their environment;
 * the `finally` SIGKILLs any that are left, by PID.
 */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeModel, startFakeModel } from "../support/fake-model.ts";
import { PI_CLI, writeFakeAgentConfig } from "../support/pi-sandbox.ts";
import { stepResponder } from "../support/step-responder.ts";
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
  const model = await startSmokeModel();
  const agentDir = join(dir.home, "agent");
  writeFakeAgentConfig(agentDir, model.baseUrl);
  const env: Record<string, string> = {
    PATH: `${piOnPath(dir)}:/usr/bin:/bin`,
    HOME: dir.home,
    PI_WORKFLOWS_STATE_DIR: dir.stateDir,
    PI_CODING_AGENT_DIR: agentDir,
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
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
    await model.close();
  }
  return report;
}

/** The fake model plays each agent step of two-turn-agent right at once. */
function startSmokeModel(): Promise<FakeModel> {
  return startFakeModel({
    script: stepResponder({
      output: (contract) =>
        contract.step === "draft"
          ? { steps: ["write the README", "review it"] }
          : { risk: "none", ok: true },
    }),
  });
}

/**
 * A directory with a `pi` command the way users have one: a small wrapper that starts the real
 * Pi from devDependencies with this Node (>= 22.19, which Pi needs; the CLI under test may run on
 * another runtime).
 */
function piOnPath(dir: SmokeDir): string {
  const bin = join(dir.root, "bin");
  mkdirSync(bin, { recursive: true });
  const wrapper = join(bin, "pi");
  // The binary smoke sets a hostile NODE_OPTIONS the binary must ignore; the user's own Pi would
  // not run with it either, so this `pi` drops it.
  writeFileSync(
    wrapper,
    `#!/bin/sh\nunset NODE_OPTIONS\nexec "${process.execPath}" "${PI_CLI}" "$@"\n`,
  );
  chmodSync(wrapper, 0o755);
  return bin;
}

/**
 * The end-to-end smoke scenario shared by the binary, Deno and Node 22 smokes. It drives the
 * real CLI as a user would, in a temp directory with a clean environment:
 *
 * 1. `--version`; `host start`; `host status --json` says running with an epoch;
 * 2. `start hello.workflow.ts --wait` (a compute, a shell node and a relative import) completes,
 *    and `status --json` shows every node ok; a missing workflow file is refused on one line;
 * 3. a second, slower run: its worker is SIGKILLed in the middle of a pure compute step, and the
 *    host recovers the run in a new worker and completes it; only workers loaded workflow code;
 * 4. a third run is paused (its worker stops), resumed and cancelled; `list --all` shows all three;
 * 5. `host stop`; no process of the smoke is left; `doctor` is clean; no runtime warnings.
 *
 * Processes of this smoke are recognised by its private state directory in their environment;
 * the `finally` SIGKILLs any that are left, by PID.
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type CommandResult,
  killAll,
  processesWithEnv,
  type ProcessInfo,
  runCommand,
  waitFor,
} from "./processes.ts";

export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface SmokeDir {
  root: string;
  home: string;
  stateDir: string;
  project: string;
}

/** An empty temp dir with a HOME, a state dir and a project holding the two workflows. */
export function makeSmokeDir(label: string): SmokeDir {
  const root = mkdtempSync(join(tmpdir(), `piw-smoke-${label}-`));
  const home = join(root, "home");
  const stateDir = join(home, "state");
  const project = join(root, "project");
  mkdirSync(join(project, "lib"), { recursive: true });
  mkdirSync(home, { recursive: true });
  const copies: Array<[string, string]> = [
    ["examples/hello.workflow.ts", "hello.workflow.ts"],
    ["examples/lib/greet.ts", "lib/greet.ts"],
    ["test/smoke/fixtures/slow.workflow.ts", "slow.workflow.ts"],
    ["test/smoke/fixtures/lib/smoke-helpers.ts", "lib/smoke-helpers.ts"],
  ];
  for (const [from, to] of copies) copyFileSync(join(REPO_ROOT, from), join(project, to));
  return { root, home, stateDir, project };
}

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

export interface ScenarioReport {
  label: string;
  ok: boolean;
  steps: string[];
  error?: string;
  helloMs?: number;
  recoveryMs?: number;
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
  const marker = `PI_WORKFLOWS_STATE_DIR=${dir.stateDir}`;
  const report: ScenarioReport = { label: options.label, ok: false, steps: [] };
  const step = (text: string) => report.steps.push(text);
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
  const cliJson = async (args: string[]): Promise<any> => {
    const result = await cli(args);
    expectExit(result, 0, args);
    return parseJson(result.stdout, args);
  };
  const ours = () => processesWithEnv(marker);

  try {
    const version = await cli(["--version"]);
    expectExit(version, 0, ["--version"]);
    check(version.stdout.trim() === options.expectedVersion, `--version printed ${version.stdout}`);
    step("version");

    expectExit(await cli(["host", "start"]), 0, ["host", "start"]);
    const running = await cliJson(["host", "status", "--json"]);
    check(
      running.state === "running" && running.socket === "available" && running.epoch >= 1,
      `host status after start: ${JSON.stringify(running)}`,
    );
    const host = findHost(ours());
    checkExe(host, options.expectedExe, "host");
    step("host started");

    const helloStart = Date.now();
    const hello = await cliJson([
      "start",
      "hello.workflow.ts",
      "--input-json",
      '{"name":"Smoke"}',
      "--wait",
      "--json",
    ]);
    report.helloMs = Date.now() - helloStart;
    check(
      hello.run?.state === "completed" && hello.run.output?.message === "Hello, Smoke!",
      `hello run: ${JSON.stringify(hello)}`,
    );
    const helloStatus = await cliJson(["status", hello.run.runId, "--json"]);
    const helloNodes = helloStatus.attempts.map((a: any) => `${a.nodeId}:${a.state}`);
    check(
      helloNodes.join(",") === "greet:ok,echo:ok,finish:ok",
      `hello attempts: ${helloNodes}`,
    );
    step("hello completed (compute, shell, relative import)");

    const missing = await cli(["start", "missing.workflow.ts"]);
    check(
      missing.code !== 0 && missing.stderr.trim().split("\n").length === 1 &&
        !/\n\s+at /.test(missing.stderr),
      `missing workflow: exit ${missing.code}, stderr ${JSON.stringify(missing.stderr)}`,
    );
    step("missing workflow refused on one line");

    const slow = await cliJson(["start", "slow.workflow.ts", "--json"]);
    const runId: string = slow.run.runId;
    await waitFor("the slow step to start", 30_000, async () => {
      const status = await cliJson(["status", runId, "--json"]);
      const running = (status.attempts ?? []).some((a: any) =>
        a.nodeId === "slow" && a.state === "running"
      );
      return running ? true : undefined;
    });
    const worker = findWorker(ours(), host.pid);
    checkExe(worker, options.expectedExe, "worker");
    process.kill(worker.pid, "SIGKILL");
    const killedAt = Date.now();
    step("worker SIGKILLed in the slow step");

    const finished = await waitFor("the slow run to finish after recovery", 60_000, async () => {
      const status = await cliJson(["status", runId, "--json"]);
      return ["completed", "failed", "cancelled", "timed_out"].includes(status.run.state)
        ? status
        : undefined;
    }, 200);
    report.recoveryMs = Date.now() - killedAt;
    const slowStates = finished.attempts
      .filter((a: any) => a.nodeId === "slow")
      .map((a: any) => a.state);
    check(
      finished.run.state === "completed" && finished.run.output?.slow?.waitedMs > 0 &&
        slowStates.join(",") === "interrupted,ok",
      `slow run after recovery: ${JSON.stringify({ run: finished.run, slowStates })}`,
    );
    step("host recovered and completed the slow run");

    // The resolver and both workers loaded the slow workflow; the host never did.
    const loaders = readFileSync(join(dir.project, "loads.ndjson"), "utf8").trim().split("\n")
      .map((line) => JSON.parse(line) as { pid: number; args: string[] });
    check(
      loaders.length >= 3 && loaders.every((l) => l.args[0] === "worker") &&
        loaders.every((l) => l.pid !== host.pid),
      `processes that loaded the workflow: ${JSON.stringify(loaders)}`,
    );
    step(`only workers loaded workflow code (${loaders.length} loads)`);

    const third = (await cliJson(["start", "slow.workflow.ts", "--json"])).run.runId as string;
    const slowRunning = async (id: string, count: number) => {
      const status = await cliJson(["status", id, "--json"]);
      const running = (status.attempts ?? []).filter((a: any) => a.nodeId === "slow");
      return running.length === count && running.at(-1).state === "running" ? true : undefined;
    };
    await waitFor("the third run's slow step to start", 30_000, () => slowRunning(third, 1));
    const paused = await cliJson(["pause", third, "--json"]);
    check(paused.run.paused === true, `pause: ${JSON.stringify(paused)}`);
    await waitFor("the paused run's worker to stop", 20_000, () => {
      return ours().some((p) => p.ppid === host.pid && isArgvTail(p.argv, ["worker"]))
        ? undefined
        : true;
    });
    const resumed = await cliJson(["resume", third, "--json"]);
    check(resumed.run.paused === false, `resume: ${JSON.stringify(resumed)}`);
    await waitFor(
      "the resumed run's slow step to start again",
      30_000,
      () => slowRunning(third, 2),
    );
    const cancelled = await cliJson(["cancel", third, "--json"]);
    check(cancelled.run.state === "cancelled", `cancel: ${JSON.stringify(cancelled)}`);
    const listed = await cliJson(["list", "--all", "--json"]);
    const states = listed.runs.map((r: any) => r.state).sort().join(",");
    check(states === "cancelled,completed,completed", `list --all: ${states}`);
    step("pause, resume and cancel a third run; list --all");

    const idle = await waitFor("the host to be idle", 20_000, async () => {
      const status = await cliJson(["host", "status", "--json"]);
      return status.activeWorkers === 0 ? status : undefined;
    });
    check(
      idle.state === "running" && idle.runs.running === 0 && idle.runs.queued === 0 &&
        idle.runs.parked === 0 && idle.expiredClaims === 0 && idle.ambiguousEffects === 0,
      `host status at the end: ${JSON.stringify(idle)}`,
    );
    step("host status idle");

    expectExit(await cli(["host", "stop"]), 0, ["host", "stop"]);
    await waitFor("every process of the smoke to exit", 20_000, () => {
      return ours().length === 0 ? true : undefined;
    });
    const stopped = await cli(["host", "status", "--json"]);
    check(
      parseJson(stopped.stdout, ["host", "status"]).state === "stopped",
      `host status after stop: ${stopped.stdout}`,
    );
    check(ours().length === 0, "host status started a process after host stop");
    step("host stopped, no process left");

    const doctor = await cliJson(["doctor", "--json"]);
    check(
      doctor.ok === true && doctor.violations.length === 0,
      `doctor after stop: ${JSON.stringify(doctor)}`,
    );
    check(ours().length === 0, "doctor started a process");
    step("doctor ok");

    // Runtime notices (Node 22 calls node:sqlite experimental) are noise users cannot act on.
    const logs = [join(dir.stateDir, "host.log"), ...workerLogs(dir.stateDir)];
    const noisy = [...stderrSeen, ...logs.map((file) => readFileSync(file, "utf8"))]
      .flatMap((text) => text.split("\n"))
      .filter((line) => /Warning:/.test(line));
    check(noisy.length === 0, `runtime warnings reached users: ${noisy.join(" | ")}`);
    step("no runtime warnings on stderr or in host and worker logs");
    report.ok = true;
  } catch (error) {
    report.error = error instanceof Error ? error.message : String(error);
  } finally {
    killAll(ours());
  }
  return report;
}

/** The stderr files of workers and resolver children (`<state>/workers/*.err`). */
function workerLogs(stateDir: string): string[] {
  const folder = join(stateDir, "workers");
  if (!existsSync(folder)) return [];
  return readdirSync(folder).filter((name) => name.endsWith(".err")).map((name) =>
    join(folder, name)
  );
}

function findHost(processes: ProcessInfo[]): ProcessInfo {
  const hosts = processes.filter((p) => isArgvTail(p.argv, ["host", "run"]));
  check(hosts.length === 1, `expected one host process, found ${hosts.length}`);
  return hosts[0];
}

function findWorker(processes: ProcessInfo[], hostPid: number): ProcessInfo {
  const workers = processes.filter((p) => p.ppid === hostPid && isArgvTail(p.argv, ["worker"]));
  check(workers.length === 1, `expected one worker child of the host, found ${workers.length}`);
  return workers[0];
}

function isArgvTail(argv: string[], tail: string[]): boolean {
  return argv.slice(-tail.length).join("\0") === tail.join("\0");
}

function checkExe(info: ProcessInfo, expected: string, role: string): void {
  check(info.exe === expected, `the ${role} runs ${info.exe}, expected ${expected}`);
}

function expectExit(result: CommandResult, code: number, args: string[]): void {
  if (result.code === code) return;
  const detail = (result.stderr || result.stdout).trim().split("\n").slice(-3).join(" | ");
  throw new Error(
    `pi-workflows ${args.join(" ")} exited ${
      result.code ?? result.signal
    }, expected ${code}: ${detail}`,
  );
}

function parseJson(text: string, args: string[]): any {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`pi-workflows ${args.join(" ")} printed no JSON: ${text.slice(0, 200)}`);
  }
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** Removes the smoke dir; kept when `PI_WORKFLOWS_SMOKE_KEEP=1` for a look at the host log. */
export function removeSmokeDir(dir: SmokeDir): void {
  if (process.env.PI_WORKFLOWS_SMOKE_KEEP === "1") return;
  rmSync(dir.root, { recursive: true, force: true });
}

/** Prints the report as one JSON line and sets the exit code. */
export function finish(report: ScenarioReport, extra: Record<string, unknown> = {}): void {
  console.log(JSON.stringify({ ...report, ...extra }));
  if (!report.ok) process.exitCode = 1;
}

export function packageVersion(): string {
  return JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).version;
}

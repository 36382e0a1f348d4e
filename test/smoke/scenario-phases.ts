/**
 * The phases of the smoke scenario (scenario.ts), in order. Each drives the CLI through
 * `ctx.cli`, checks what it printed and what runs on the machine, and throws one line on the
 * first thing that is wrong.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type CommandResult, type ProcessInfo, waitFor } from "./processes.ts";
import type { ScenarioReport, SmokeDir } from "./smoke-dir.ts";
import { reconcileController } from "./controller-phase.ts";

export interface SmokeContext {
  dir: SmokeDir;
  expectedExe: string;
  expectedVersion: string;
  report: ScenarioReport;
  /** stderr of every command run so far. */
  stderrSeen: string[];
  cli(args: string[]): Promise<CommandResult>;
  /** Live processes of this smoke. */
  ours(): ProcessInfo[];
  host: ProcessInfo | null;
}

type Phase = (ctx: SmokeContext) => Promise<void>;

async function startHost(ctx: SmokeContext): Promise<void> {
  const version = await ctx.cli(["--version"]);
  expectExit(version, 0, ["--version"]);
  // The version, then how it was built: `0.13.0 (commit 1a2b3c4d5e6f, built 2026-…Z)`.
  check(
    version.stdout.trim().split(" ")[0] === ctx.expectedVersion,
    `--version printed ${version.stdout}`,
  );
  step(ctx, "version");

  expectExit(await ctx.cli(["host", "start"]), 0, ["host", "start"]);
  const running = await cliJson(ctx, ["host", "status", "--json"]);
  check(
    running.state === "running" && running.socket === "available" && running.epoch >= 1,
    `host status after start: ${JSON.stringify(running)}`,
  );
  const hosts = ctx.ours().filter((p) => isArgvTail(p.argv, ["host", "run"]));
  check(hosts.length === 1, `expected one host process, found ${hosts.length}`);
  ctx.host = hosts[0];
  checkExe(ctx.host, ctx.expectedExe, "host");
  step(ctx, "host started");
}

async function runShortWorkflows(ctx: SmokeContext): Promise<void> {
  const started = Date.now();
  const hello = await cliJson(ctx, [
    "start",
    "hello.workflow.ts",
    "--input-json",
    '{"name":"Smoke"}',
    "--wait",
    "--json",
  ]);
  ctx.report.helloMs = Date.now() - started;
  check(
    hello.run?.state === "completed" && hello.run.output?.message === "Hello, Smoke!",
    `hello run: ${JSON.stringify(hello)}`,
  );
  const status = await cliJson(ctx, ["status", hello.run.runId, "--json"]);
  const nodes = status.attempts.map((a: any) => `${a.nodeId}:${a.state}`).join(",");
  check(nodes === "greet:ok,echo:ok,finish:ok", `hello attempts: ${nodes}`);
  step(ctx, "hello completed (compute, shell, relative import)");

  const bare = await cliJson(ctx, ["start", "bare.workflow.ts", "--wait", "--json"]);
  check(
    bare.run?.state === "completed" && bare.run.output?.bare === true,
    `bare run: ${JSON.stringify(bare)}`,
  );
  step(ctx, 'a workflow importing "pi-workflows" completed');

  const missing = await ctx.cli(["start", "missing.workflow.ts"]);
  check(
    missing.code !== 0 && missing.stderr.trim().split("\n").length === 1 &&
      !/\n\s+at /.test(missing.stderr),
    `missing workflow: exit ${missing.code}, stderr ${JSON.stringify(missing.stderr)}`,
  );
  step(ctx, "missing workflow refused on one line");
}

/** Two agent steps headless: Pi found on PATH, the bridge delivered by this very program. */
async function runHeadlessAgent(ctx: SmokeContext): Promise<void> {
  const started = Date.now();
  const run = await cliJson(ctx, [
    "start",
    "two-turn-agent.workflow.ts",
    "add",
    "a",
    "README",
    "--wait",
    "--json",
  ]);
  ctx.report.headlessMs = Date.now() - started;
  check(
    run.run?.state === "completed" && run.run.executionMode === "headless" &&
      run.run.output?.review?.ok === true && run.run.output?.plan?.steps?.length === 2,
    `two-turn-agent run: ${JSON.stringify(run)}`,
  );
  const pis = ctx.ours().filter((p) => p.argv.join(" ") === "pi");
  check(pis.length === 0, `Pi children left after the run: ${pis.length}`);
  step(ctx, "two-turn-agent completed headless (pi from PATH, two agent steps)");
}

async function crashWorkerAndRecover(ctx: SmokeContext): Promise<void> {
  const runId = await startSlow(ctx, "crash");
  await waitFor("the slow step to start", 30_000, () => slowStepRunning(ctx, runId, 1));
  const worker = workerOfHost(ctx);
  check(worker !== undefined, "found no worker child of the host");
  checkExe(worker, ctx.expectedExe, "worker");
  process.kill(worker.pid, "SIGKILL");
  const killedAt = Date.now();
  step(ctx, "worker SIGKILLed in the slow step");

  await waitFor("the host to run the slow step again", 60_000, () => {
    return slowStepRunning(ctx, runId, 2);
  });
  ctx.report.recoveryMs = Date.now() - killedAt;
  writeFileSync(join(ctx.dir.project, "gate-crash"), "");
  const finished = await waitFor("the slow run to finish", 60_000, async () => {
    const status = await cliJson(ctx, ["status", runId, "--json"]);
    return ["completed", "failed", "cancelled", "timed_out"].includes(status.run.state)
      ? status
      : undefined;
  });
  const slowStates = finished.attempts
    .filter((a: any) => a.nodeId === "slow")
    .map((a: any) => a.state);
  check(
    finished.run.state === "completed" && finished.run.output?.slow?.gate === "crash" &&
      slowStates.join(",") === "interrupted,ok",
    `slow run after recovery: ${JSON.stringify({ run: finished.run, slowStates })}`,
  );
  step(ctx, "host recovered and completed the slow run");

  // The resolver and both workers loaded the slow workflow; the host never did.
  const loaders = readFileSync(join(ctx.dir.project, "loads.ndjson"), "utf8").trim().split("\n")
    .map((line) => JSON.parse(line) as { pid: number; args: string[] });
  check(
    loaders.length >= 3 && loaders.every((l) => l.args[0] === "worker") &&
      loaders.every((l) => l.pid !== ctx.host?.pid),
    `processes that loaded the workflow: ${JSON.stringify(loaders)}`,
  );
  step(ctx, `only workers loaded workflow code (${loaders.length} loads)`);
}

async function pauseResumeCancel(ctx: SmokeContext): Promise<void> {
  // This run's gate never opens: it is still in the slow step when the smoke cancels it.
  const runId = await startSlow(ctx, "pause");
  await waitFor("the slow step to start", 30_000, () => slowStepRunning(ctx, runId, 1));
  const paused = await cliJson(ctx, ["pause", runId, "--json"]);
  check(paused.run.paused === true, `pause: ${JSON.stringify(paused)}`);
  await waitFor("the paused run's worker to stop", 20_000, () => {
    return workerOfHost(ctx) === undefined ? true : undefined;
  });
  const resumed = await cliJson(ctx, ["resume", runId, "--json"]);
  check(resumed.run.paused === false, `resume: ${JSON.stringify(resumed)}`);
  await waitFor("the slow step to start again", 30_000, () => slowStepRunning(ctx, runId, 2));
  const cancelled = await cliJson(ctx, ["cancel", runId, "--json"]);
  check(cancelled.run.state === "cancelled", `cancel: ${JSON.stringify(cancelled)}`);
  const listed = await cliJson(ctx, ["list", "--all", "--json"]);
  const states = listed.runs.map((r: any) => r.state).sort().join(",");
  // hello, bare, two-turn-agent, the controller's child run, the crash-recovered slow run.
  check(
    states === "cancelled,completed,completed,completed,completed,completed",
    `list --all: ${states}`,
  );
  step(ctx, "pause, resume and cancel a run; list --all");
}

/**
 * A prune: its checkpoints run on a thread of their own in this runtime (the executable starts
 * that thread from source text it carries: checkpoint-thread.ts), and none fell back to the
 * host's event loop.
 */
async function pruneOffThread(ctx: SmokeContext): Promise<void> {
  expectExit(await ctx.cli(["prune"]), 0, ["prune"]);
  const log = readFileSync(join(ctx.dir.stateDir, "host.log"), "utf8");
  const pass = log.split("\n").find((line) => / retention\.pass source=command /.test(line));
  check(pass?.includes(" checkpoints=thread") === true, `prune's log line: ${pass}`);
  const failed = log.split("\n").filter((line) => / checkpoint\.threadFailed /.test(line));
  check(failed.length === 0, `checkpoint thread failed: ${failed.join(" | ")}`);
  step(ctx, "prune: checkpoints on their own thread");
}

async function stopHost(ctx: SmokeContext): Promise<void> {
  const idle = await waitFor("the host to be idle", 20_000, async () => {
    const status = await cliJson(ctx, ["host", "status", "--json"]);
    return status.activeWorkers === 0 ? status : undefined;
  });
  check(
    idle.state === "running" && idle.runs.running === 0 && idle.runs.queued === 0 &&
      idle.runs.parked === 0 && idle.expiredClaims === 0 && idle.ambiguousEffects === 0,
    `host status at the end: ${JSON.stringify(idle)}`,
  );
  step(ctx, "host status idle");

  expectExit(await ctx.cli(["host", "stop"]), 0, ["host", "stop"]);
  await waitFor("every process of the smoke to exit", 20_000, () => {
    return ctx.ours().length === 0 ? true : undefined;
  });
  const stopped = await ctx.cli(["host", "status", "--json"]);
  check(
    parseJson(stopped.stdout, ["host", "status"]).state === "stopped",
    `host status after stop: ${stopped.stdout}`,
  );
  check(ctx.ours().length === 0, "host status started a process after host stop");
  step(ctx, "host stopped, no process left");

  const doctor = await cliJson(ctx, ["doctor", "--json"]);
  check(
    doctor.ok === true && doctor.violations.length === 0,
    `doctor after stop: ${JSON.stringify(doctor)}`,
  );
  check(ctx.ours().length === 0, "doctor started a process");
  step(ctx, "doctor ok");
}

/** Runtime notices (Node 22 calls node:sqlite experimental) are noise users cannot act on. */
function checkNoWarnings(ctx: SmokeContext): Promise<void> {
  const logs = [join(ctx.dir.stateDir, "host.log"), ...workerLogs(ctx.dir.stateDir)];
  const noisy = [...ctx.stderrSeen, ...logs.map((file) => readFileSync(file, "utf8"))]
    .flatMap((text) => text.split("\n"))
    .filter((line) => /Warning:/.test(line));
  check(noisy.length === 0, `runtime warnings reached users: ${noisy.join(" | ")}`);
  step(ctx, "no runtime warnings on stderr or in host and worker logs");
  return Promise.resolve();
}

/**
 * `pi-workflows test` finds the project's `*.workflow.test.ts` and runs them with the test kit:
 * no test runner installed, its own host in a temp dir (the smoke's host is not touched).
 */
async function runWorkflowTests(ctx: SmokeContext): Promise<void> {
  const result = await ctx.cli(["test"]);
  expectExit(result, 0, ["test"]);
  check(
    result.stdout.trim().split("\n").at(-1) === "2 passed, 0 failed",
    `pi-workflows test printed: ${result.stdout.slice(-500)}`,
  );
  step(ctx, "pi-workflows test: 2 passed, 0 failed");
}

export const SCENARIO_PHASES: readonly Phase[] = [
  startHost,
  runShortWorkflows,
  runWorkflowTests,
  runHeadlessAgent,
  reconcileController,
  crashWorkerAndRecover,
  pauseResumeCancel,
  pruneOffThread,
  stopHost,
  checkNoWarnings,
];

async function startSlow(ctx: SmokeContext, gate: string): Promise<string> {
  const input = JSON.stringify({ gate });
  const started = await cliJson(ctx, [
    "start",
    "slow.workflow.ts",
    "--input-json",
    input,
    "--json",
  ]);
  return started.run.runId;
}

/** True when the run's `count`-th attempt of the slow step is running. */
async function slowStepRunning(
  ctx: SmokeContext,
  runId: string,
  count: number,
): Promise<true | undefined> {
  const status = await cliJson(ctx, ["status", runId, "--json"]);
  const attempts = (status.attempts ?? []).filter((a: any) => a.nodeId === "slow");
  return attempts.length === count && attempts.at(-1).state === "running" ? true : undefined;
}

/** The host's worker child (not a `worker --resolve` child), if one is running. */
function workerOfHost(ctx: SmokeContext): ProcessInfo | undefined {
  const workers = ctx.ours().filter((p) =>
    p.ppid === ctx.host?.pid && isArgvTail(p.argv, ["worker"])
  );
  check(workers.length <= 1, `expected at most one worker child, found ${workers.length}`);
  return workers[0];
}

/** The stderr files of workers and resolver children (`<state>/workers/*.err`). */
function workerLogs(stateDir: string): string[] {
  const folder = join(stateDir, "workers");
  if (!existsSync(folder)) return [];
  return readdirSync(folder).filter((name) => name.endsWith(".err")).map((name) =>
    join(folder, name)
  );
}

function step(ctx: SmokeContext, text: string): void {
  ctx.report.steps.push(text);
}

async function cliJson(ctx: SmokeContext, args: string[]): Promise<any> {
  const result = await ctx.cli(args);
  expectExit(result, 0, args);
  return parseJson(result.stdout, args);
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
  const got = result.code ?? result.signal;
  throw new Error(`pi-workflows ${args.join(" ")} exited ${got}, expected ${code}: ${detail}`);
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

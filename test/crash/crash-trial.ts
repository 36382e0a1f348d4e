/**
 * The crash trial, run by hand (not a suite test; one iteration takes tens of seconds):
 *
 *   node test/crash/crash-trial.ts [--seed N] [--iterations K] [--kills M] [--gap-ms G]
 *     [--ledgers L] [--effect-ms E] [--prune] [--no-schedule] [--only kind,...]
 *
 * Each iteration starts the realistic workflows of trial-workflows.ts (the examples, a ledger of
 * plain and managed effects that each append a line to a side file, a checkpoint, notify nodes,
 * shell nodes, an agent group and agent steps in headless Pi against the fake model) through the
 * npm bundle of the CLI, on a fresh temp state and agent dir, and meanwhile SIGKILLs the host, a
 * worker, a Pi child, any child of the host, or the host with all its children, M times at
 * seeded random instants (G ms apart at most). It answers checkpoints and decisions with the CLI,
 * plays the operator for ambiguous effects (reading the side file), and restarts nothing by hand:
 * the next CLI command starts the next host. Once every run ended it checks: each run completed
 * with its expected output, every side effect applied once, every answer given is the one the
 * run used, one notification per notify node, `doctor` clean, the host answers, and no worker,
 * Pi or command is left once the runs ended and the host stopped. Prints one JSON line (seed,
 * iterations, kills by target, runs, failures); progress goes to stderr.
 *
 * Meanwhile a person acts too: starts more runs, pauses one (the trial resumes it), and with
 * `--prune` prunes every ended run, some of these commands with the host (or a child of it) killed
 * within 200 ms of their start. A schedule fires a managed-effect workflow every second during the
 * kills (not with `--no-schedule`); its runs are checked the same way. `--ledgers L` starts L
 * ledgers (3), whose effects each take up to E ms (1200) before and after their line; `--only`
 * keeps the named kinds of trial-workflows.ts. The PATH must lead to Node >= 22.19 (Pi's).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { benchBundle } from "../bench/_bundle.ts";
import { startFakeModel } from "../support/fake-model.ts";
import { createPiSandbox, PI_CLI } from "../support/pi-sandbox.ts";
import { stepResponder, submitCall, submitContractIn } from "../support/step-responder.ts";
import { processesWithEnv, type ProcessInfo, runCommand } from "../smoke/processes.ts";
import { prng } from "../support/fuzz-frames.ts";
import { processesInside } from "../support/temp-root.ts";
import {
  FAN_SOURCE,
  LEDGER_APPLIED,
  LEDGER_LINES,
  LEDGER_SOURCE,
  TICK_SOURCE,
  TRIAL_RUNS,
  type TrialRunSpec,
} from "./trial-workflows.ts";

const { values: args } = parseArgs({
  allowNegative: true,
  options: {
    seed: { type: "string" },
    iterations: { type: "string", default: "5" },
    kills: { type: "string", default: "4" },
    "gap-ms": { type: "string", default: "2500" },
    ledgers: { type: "string", default: "3" },
    "effect-ms": { type: "string", default: "1200" },
    only: { type: "string" },
    prune: { type: "boolean", default: false },
    schedule: { type: "boolean", default: true },
  },
});
const seed = Number(args.seed ?? Math.floor(Math.random() * 2 ** 31));
const iterations = Number(args.iterations);
const killsPerIteration = Number(args.kills);
const gapMs = Number(args["gap-ms"]);
const ledgers = Number(args.ledgers);
const effectMs = Number(args["effect-ms"]);
const only = args.only?.split(",");
const withPrune = args.prune ?? false;
const withSchedule = args.schedule ?? true;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line: string) => process.stderr.write(`[trial] ${line}\n`);

type Target = "host" | "worker" | "pi" | "child" | "all" | "cli" | "effect";
/** `effect` twice: a worker inside an external node is what a random instant rarely hits. */
const TARGETS: Target[] = ["host", "worker", "pi", "child", "all", "cli", "effect", "effect"];
const ENDED = new Set(["completed", "failed", "timed_out", "cancelled"]);
/** The nodes that declare a managed effect, by run kind. */
const MANAGED_NODES: Record<string, string[]> = { ledger: ["ship", "label"], tick: ["mark"] };
const TICK_SPEC: TrialRunSpec = { kind: "tick", workflow: "tick.workflow.ts", input: () => null };

interface TrialRun {
  spec: TrialRunSpec;
  tag: string;
  side: string;
  runId: string;
  /** Answers the host accepted (exit 0), by node. */
  answered: Set<string>;
  ended?: { state: string; output: unknown; error: unknown };
  resolved: number;
}

const bundleDir = mkdtempSync(join(tmpdir(), "pwt-bundle-"));
const bundle = await benchBundle(join(bundleDir, "pi-workflows.mjs"));
const fallback = stepResponder();
const model = await startFakeModel({
  lifetimeMs: 6 * 60 * 60_000,
  script: (request) => {
    const contract = submitContractIn(request.lastUserText);
    if (contract && request.lastRole !== "tool" && request.toolNames.includes("workflow")) {
      if (contract.step === "draft") return submitCall(contract, { steps: ["look", "change"] });
      if (contract.step === "review") return submitCall(contract, { risk: "none", ok: true });
    }
    return fallback(request);
  },
});

const totals = {
  iterations: 0,
  runs: 0,
  kills: {} as Record<string, number>,
  resolves: 0,
  pauses: 0,
  prunes: 0,
  pruned: 0,
  crashLoopFailures: 0,
};
const failures: { iteration: number; seed: number; what: string }[] = [];
const startedAt = Date.now();

try {
  for (let i = 0; i < iterations; i++) {
    const iterationSeed = (seed + i * 7919) >>> 0;
    const problems = await iteration(iterationSeed);
    totals.iterations++;
    for (const what of problems) failures.push({ iteration: i, seed: iterationSeed, what });
    log(`iteration ${i} seed ${iterationSeed}: ${problems.length} problem(s)`);
    for (const what of problems) log(`  ${what}`);
  }
} finally {
  await model.close();
  rmSync(bundleDir, { recursive: true, force: true });
}
console.log(JSON.stringify({
  trial: "crash",
  seed,
  iterations: totals.iterations,
  kills_per_iteration: killsPerIteration,
  gap_ms: gapMs,
  runs: totals.runs,
  kills: totals.kills,
  operator_resolves: totals.resolves,
  pauses: totals.pauses,
  prunes: totals.prunes,
  runs_pruned_before_checked: totals.pruned,
  crash_loop_failures: totals.crashLoopFailures,
  failures,
  seconds: Math.round((Date.now() - startedAt) / 1000),
}));
process.exit(failures.length === 0 ? 0 : 1);

async function iteration(iterationSeed: number): Promise<string[]> {
  // Seeded (mulberry32), so an iteration's instants and targets replay.
  const rng = prng(iterationSeed);
  const sandbox = createPiSandbox({
    modelBaseUrl: model.baseUrl,
    env: {
      PI_WORKFLOWS_PI: PI_CLI,
      PI_WORKFLOWS_HOST_IDLE_MS: "120000",
      PI_WORKFLOWS_KILL_GRACE_MS: "1000",
    },
  });
  const problems: string[] = [];
  const marker = `PI_CODING_AGENT_DIR=${sandbox.agentDir}`;
  const cli = (argv: string[], timeoutMs = 90_000) =>
    runCommand(process.execPath, [bundle, ...argv], {
      cwd: sandbox.project,
      env: sandbox.env,
      timeoutMs,
    });
  try {
    writeFileSync(join(sandbox.project, "ledger.workflow.ts"), LEDGER_SOURCE);
    writeFileSync(join(sandbox.project, "fan.workflow.ts"), FAN_SOURCE);
    writeFileSync(join(sandbox.project, "tick.workflow.ts"), TICK_SOURCE);
    const runs: TrialRun[] = [];
    let act = cli;
    const specs = TRIAL_RUNS.filter((spec) => !only || only.includes(spec.kind));
    const startRun = async (spec: TrialRunSpec) => {
      const tag = `t${iterationSeed.toString(36)}x${runs.length}`;
      const side = join(sandbox.root, `side-${tag}.log`);
      const delays = Array.from({ length: 6 }, () => Math.floor(rng() * effectMs));
      const input = JSON.stringify(spec.input(tag, side, delays));
      const started = await retrying(
        () => act(["start", spec.workflow, "--input-json", input, "--json"]),
        `start ${spec.kind}`,
      );
      const runId = JSON.parse(started.stdout).run.runId as string;
      runs.push({ spec, tag, side, runId, answered: new Set(), resolved: 0 });
      totals.runs++;
    };
    // The first start brings the first host up; kills begin once these runs are queued.
    for (const spec of specs) await startRun(spec);
    const ledger = specs.find((spec) => spec.kind === "ledger");
    for (let n = 1; ledger && n < ledgers; n++) await startRun(ledger);
    const tickSide = join(sandbox.root, "ticks.log");
    if (withSchedule) {
      await retrying(
        () =>
          cli([
            "schedule",
            "add",
            "tick",
            "tick.workflow.ts",
            "--every",
            "1s",
            "--input-json",
            JSON.stringify({ side: tickSide }),
          ]),
        "schedule add",
      );
    }

    let driving = true;
    // How many kills hit each run's worker or Pi (a host kill is not one: the worker it leaves
    // ends as orphaned, not as a crash of the run).
    const killedRuns = new Map<string, number>();
    const strikePid = (pid: number) => {
      const info = processesWithEnv(marker).find((p) => p.pid === pid);
      const key = info ? "effect_worker" : "effect_worker_none";
      if (info) {
        for (const runId of runsOf(sandbox.stateDir, [info])) {
          killedRuns.set(runId, (killedRuns.get(runId) ?? 0) + 1);
        }
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Gone meanwhile.
        }
      }
      totals.kills[key] = (totals.kills[key] ?? 0) + 1;
      log(`kill effect worker: ${info ? pid : "none"}`);
    };
    const strike = (target: Target, why: string) => {
      const killed = killTarget(marker, target, rng);
      for (const runId of runsOf(sandbox.stateDir, killed)) {
        killedRuns.set(runId, (killedRuns.get(runId) ?? 0) + 1);
      }
      const key = `${target}${why}${killed.length === 0 ? "_none" : ""}`;
      totals.kills[key] = (totals.kills[key] ?? 0) + 1;
      log(`kill ${target}${why}: ${killed.map((p) => `${p.pid}(${role(p)})`).join(" ") || "none"}`);
    };
    const killer = (async () => {
      for (let k = 0; k < killsPerIteration && driving; k++) {
        const target = TARGETS[Math.floor(rng() * TARGETS.length)];
        // Aim: wait (up to the gap) for a process of the target's kind, then strike at a random
        // instant of its first quarter second.
        const until = Date.now() + Math.floor(rng() * gapMs);
        if (target === "effect") {
          // A worker inside an external node (its effect before, during or after its line):
          // the worker itself, or its host.
          let pid: number | null = null;
          while (driving && Date.now() < until && pid === null) {
            pid = effectWorker(sandbox.stateDir, rng);
            if (pid === null) await sleep(40);
          }
          await sleep(Math.floor(rng() * 600));
          if (!driving) break;
          if (pid !== null && rng() < 0.7) strikePid(pid);
          else strike("host", "@effect");
          continue;
        }
        while (driving && Date.now() < until && !present(marker, target)) await sleep(40);
        await sleep(Math.floor(rng() * 250));
        if (!driving) break;
        strike(target, "");
      }
    })();
    // A person's command, during the kills sometimes with the host killed under it (its commit,
    // a resolver child it waits for, a prune pass), within 200 ms of its start.
    act = (argv: string[]) => {
      if (driving && rng() < 0.35) {
        const delay = Math.floor(rng() * 200);
        void sleep(delay).then(() => strike(rng() < 0.7 ? "host" : "child", `@${argv[0]}`));
      }
      return cli(argv);
    };
    // Meanwhile a person: starts more runs, pauses one, prunes (each now and then).
    const person = (async () => {
      for (let k = 0; k < killsPerIteration && driving; k++) {
        await sleep(Math.floor(rng() * gapMs * 1.5));
        if (!driving) break;
        const move = rng();
        if (move < 0.4) {
          await startRun(specs[Math.floor(rng() * specs.length)]).catch((error: Error) =>
            log(`late start: ${error.message.slice(0, 200)}`)
          );
        } else if (move < 0.7 || !withPrune) {
          const open = runs.filter((run) => !run.ended);
          if (open.length === 0) continue;
          const run = open[Math.floor(rng() * open.length)];
          const paused = await act(["pause", run.runId]);
          totals.pauses++;
          log(`pause ${run.spec.kind}: exit ${paused.code} ${paused.stderr.trim().slice(-160)}`);
        } else {
          const pruned = await act(["prune", "--keep-days", "0", "--json"]);
          totals.prunes++;
          log(`prune: exit ${pruned.code} ${pruned.stdout.slice(0, 200)}`);
        }
      }
    })();

    const deadline = Date.now() + 240_000;
    try {
      while (runs.some((run) => !run.ended) && Date.now() < deadline) {
        await drive(runs, cli, act, problems);
        await sleep(400);
      }
    } finally {
      driving = false;
      await killer;
      await person;
    }
    // Paused, not removed: a removal takes its firings with it, which the checks read.
    if (withSchedule) await retrying(() => cli(["schedule", "pause", "tick"]), "schedule pause");
    // The kills may have stopped before the last run ended: drive on to the end without them.
    do {
      await drive(runs, cli, act, problems);
      await sleep(400);
    } while (runs.some((run) => !run.ended) && Date.now() < deadline + 60_000);
    for (const run of runs) {
      if (!run.ended) problems.push(`${run.spec.kind} ${run.runId} did not end`);
    }
    await check(runs, marker, cli, problems, killedRuns);
    if (withSchedule) checkTicks(runs, tickSide, sandbox.stateDir, problems);
  } catch (error) {
    problems.push(`trial error: ${(error as Error).stack ?? error}`);
  } finally {
    await cli(["host", "stop"], 30_000).catch(() => {});
    // `host stop` returns once the host released its claim; its process exits right after.
    let left: ProcessInfo[] = [];
    let inside: number[] = [];
    for (const until = Date.now() + 10_000; Date.now() < until; await sleep(200)) {
      left = processesWithEnv(marker);
      inside = [...new Set([...processesInside(sandbox.root), ...namingRoot(sandbox.root)])];
      if (left.length === 0 && inside.length === 0) break;
    }
    if (left.length > 0 || inside.length > 0) {
      problems.push(
        `left after host stop: ${
          left.map((p) => `${p.pid} ${p.argv.join(" ").slice(0, 120)}`).join("; ")
        } inside: ${inside.join(",")}`,
      );
    }
    await sandbox.cleanup();
  }
  return problems;
}

/** Live processes whose command line names a path under `root` (the shell nodes' commands). */
function namingRoot(root: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, "utf8").includes(root)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z") {
        found.push(Number(name));
      }
    } catch {
      // Gone while read.
    }
  }
  return found;
}

async function retrying(
  command: () => Promise<{ code: number | null; stdout: string; stderr: string }>,
  what: string,
) {
  for (let tries = 0;; tries++) {
    const result = await command();
    if (result.code === 0) return result;
    if (tries >= 5) throw new Error(`${what}: exit ${result.code}: ${result.stderr.slice(-600)}`);
    await sleep(300);
  }
}

function role(info: ProcessInfo): string {
  const argv = info.argv.join(" ");
  if (info.argv.includes("host") && info.argv.includes("run")) return "host";
  if (argv === "pi" || (info.argv.includes(PI_CLI) && info.argv.includes("rpc"))) return "pi";
  const at = info.argv.indexOf("worker");
  if (at !== -1) return info.argv[at + 1] ? `worker${info.argv[at + 1]}` : "worker";
  return info.argv[0]?.split("/").pop() ?? "?";
}

/** The PID of a live worker running an external node now, if any. */
function effectWorker(stateDir: string, rng: () => number): number | null {
  try {
    const db = new DatabaseSync(join(stateDir, "state.sqlite"), { readOnly: true });
    try {
      const rows = db.prepare(
        "SELECT w.pid AS pid FROM node_attempts a JOIN run_workers w ON w.run_id = a.run_id " +
          "AND w.status = 'live' AND w.pid IS NOT NULL " +
          "WHERE a.state = 'running' AND a.effect = 'external'",
      ).all() as { pid: number }[];
      return rows.length === 0 ? null : rows[Math.floor(rng() * rows.length)].pid;
    } finally {
      db.close();
    }
  } catch {
    return null; // no database yet, or busy
  }
}

/** Whether a process of the target's kind runs now. */
function present(marker: string, target: Target): boolean {
  const live = processesWithEnv(marker);
  if (target === "worker") return live.some((p) => role(p) === "worker");
  if (target === "pi") return live.some((p) => role(p) === "pi");
  if (target === "child" || target === "all") {
    const hosts = new Set(live.filter((p) => role(p) === "host").map((p) => p.pid));
    return live.some((p) => hosts.has(p.ppid));
  }
  if (target === "cli") return live.some((p) => role(p) !== "host" && !p.argv.includes("worker"));
  return live.some((p) => role(p) === "host");
}

/** The runs whose worker (or the worker of a Pi) is among `killed`, from run_workers. */
function runsOf(stateDir: string, killed: ProcessInfo[]): string[] {
  if (killed.length === 0) return [];
  const found = new Set<string>();
  try {
    const db = new DatabaseSync(join(stateDir, "state.sqlite"), { readOnly: true });
    try {
      const byPid = db.prepare(
        "SELECT run_id AS runId FROM run_workers WHERE pid = ? " +
          "ORDER BY started_at DESC LIMIT 1",
      );
      for (const p of killed) {
        if (role(p) === "host") continue;
        const row = (byPid.get(p.pid) ?? byPid.get(p.ppid)) as { runId: string } | undefined;
        if (row) found.add(row.runId);
      }
    } finally {
      db.close();
    }
  } catch {
    // No database yet.
  }
  return [...found];
}

/** SIGKILLs the target's processes of this sandbox now; returns what it killed. */
function killTarget(
  marker: string,
  target: Target,
  rng: () => number,
): ProcessInfo[] {
  const live = processesWithEnv(marker);
  const pick = (list: ProcessInfo[]) =>
    list.length === 0 ? [] : [list[Math.floor(rng() * list.length)]];
  const hosts = live.filter((p) => role(p) === "host");
  // The host's descendants: workers, resolvers, validators, Pi children, shell commands.
  const below = new Set(hosts.map((h) => h.pid));
  for (let grew = true; grew;) {
    grew = false;
    for (const p of live) {
      if (!below.has(p.pid) && below.has(p.ppid)) grew = below.add(p.pid) !== undefined;
    }
  }
  const descendants = live.filter((p) => below.has(p.pid) && role(p) !== "host");
  let chosen: ProcessInfo[];
  if (target === "host") chosen = hosts;
  else if (target === "worker") chosen = pick(live.filter((p) => role(p) === "worker"));
  else if (target === "pi") chosen = pick(live.filter((p) => role(p) === "pi"));
  else if (target === "child") {
    chosen = pick(live.filter((p) => hosts.some((h) => h.pid === p.ppid)));
  } else if (target === "cli") {
    // A client dying mid-command (an answer, a start, an operator's verdict).
    chosen = pick(live.filter((p) => !below.has(p.pid)));
  } else chosen = [...hosts, ...descendants];
  for (const p of chosen) {
    try {
      process.kill(p.pid, "SIGKILL");
    } catch {
      // Gone meanwhile.
    }
  }
  return chosen;
}

/** One pass over the runs: read each one's state and do what a person would. */
async function drive(
  runs: TrialRun[],
  cli: (argv: string[], timeoutMs?: number) => ReturnType<typeof runCommand>,
  act: (argv: string[]) => ReturnType<typeof runCommand>,
  problems: string[],
): Promise<void> {
  // The runs started before the list was read (a late start may land while it is read).
  const before = new Set(runs.map((run) => run.runId));
  const listed = await cli(["list", "--all", "--json"]);
  if (listed.code !== 0) return; // a host killed under it: the next pass starts the next one
  const all = JSON.parse(listed.stdout).runs as any[];
  for (const summary of all) {
    if (summary.workflowName === "tick" && !runs.some((run) => run.runId === summary.runId)) {
      runs.push({
        spec: TICK_SPEC,
        tag: "",
        side: "",
        runId: summary.runId,
        answered: new Set(),
        resolved: 0,
      });
      totals.runs++;
    }
  }
  for (const run of runs) {
    if (run.ended || (!before.has(run.runId) && run.spec !== TICK_SPEC)) continue;
    const summary = all.find((r) => r.runId === run.runId);
    if (!summary) {
      // Only a prune takes a run away, and only an ended one: its checks are the side file's.
      if (!withPrune) problems.push(`${run.spec.kind} ${run.runId} missing from list --all`);
      run.ended = { state: "pruned", output: null, error: null };
      totals.pruned++;
      continue;
    }
    if (ENDED.has(summary.state)) {
      const status = await cli(["status", run.runId, "--json"]);
      if (status.code !== 0) {
        if (withPrune && /not ?found/i.test(status.stderr)) {
          run.ended = { state: "pruned", output: null, error: null };
          totals.pruned++;
        }
        continue;
      }
      const receipt = JSON.parse(status.stdout);
      run.ended = {
        state: receipt.run.state,
        output: receipt.run.output,
        error: receipt.run.error,
      };
      (run as any).receipt = receipt;
      continue;
    }
    if (summary.paused) {
      await act(["resume", run.runId]);
      continue;
    }
    if (summary.state === "waiting" && !summary.blockedReason) {
      const status = await cli(["status", run.runId, "--json"]);
      if (status.code !== 0) continue;
      const waiting = JSON.parse(status.stdout).waiting;
      if (!waiting || !run.spec.answer) continue;
      if (run.answered.has(waiting.nodeId)) {
        problems.push(
          `${run.spec.kind} ${run.runId}: answered ${waiting.nodeId}, waits there again`,
        );
        run.answered.delete(waiting.nodeId);
      }
      const answer = await act(["answer", run.runId, waiting.nodeId, ...run.spec.answer(run.tag)]);
      if (answer.code === 0) run.answered.add(waiting.nodeId);
      else log(`answer ${run.runId} exit ${answer.code}: ${answer.stderr.trim().slice(-200)}`);
      continue;
    }
    if (summary.blockedReason === "effectAmbiguous") {
      await resolveAmbiguous(run, cli, act, problems);
      continue;
    }
    if (summary.blockedReason) {
      problems.push(`${run.spec.kind} ${run.runId} blocked ${summary.blockedReason}`);
      const resumed = await cli(["resume", run.runId]);
      if (resumed.code !== 0) {
        run.ended = { state: `blocked ${summary.blockedReason}`, output: null, error: null };
      }
    }
  }
}

/** The operator's verdict from the side file: the line is there, or it is not. */
async function resolveAmbiguous(
  run: TrialRun,
  cli: (argv: string[], timeoutMs?: number) => ReturnType<typeof runCommand>,
  act: (argv: string[]) => ReturnType<typeof runCommand>,
  problems: string[],
): Promise<void> {
  const status = await cli(["status", run.runId, "--json", "--attempts", "all"]);
  if (status.code !== 0) return;
  const receipt = JSON.parse(status.stdout);
  for (const effect of receipt.ambiguousEffects ?? []) {
    const attempt = receipt.attempts.find((a: any) => a.attemptId === effect.attemptId);
    const node = attempt?.nodeId as string | undefined;
    // docs/authoring.md: an interrupted node with a managed effect runs again, never blocks.
    if (node && MANAGED_NODES[run.spec.kind]?.includes(node)) {
      problems.push(`${run.spec.kind} ${run.runId}: blocked effectAmbiguous at managed ${node}`);
    }
    let verdict: string[] = ["--not-applied"];
    if (run.spec.kind === "ledger" && node && LEDGER_APPLIED[node]) {
      if (sideCount(run.side, `${node} ${run.tag}`) > 0) {
        verdict = ["--applied", JSON.stringify(LEDGER_APPLIED[node](run.tag))];
      }
    }
    const resolved = await act(["effect", "resolve", run.runId, effect.attemptId, ...verdict]);
    log(
      `resolve ${run.spec.kind} ${node} (managed: ${effect.managed}) ${
        verdict[0]
      }: exit ${resolved.code} ${resolved.stderr.trim().slice(-160)}`,
    );
    if (resolved.code === 0) {
      run.resolved++;
      totals.resolves++;
    }
  }
}

/** JSON with sorted keys, to compare values whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, v) =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a < b ? -1 : 1))
        : v,
  );
}

function sideCount(file: string, line: string): number {
  try {
    return readFileSync(file, "utf8").split("\n").filter((l) => l === line).length;
  } catch {
    return 0;
  }
}

async function check(
  runs: TrialRun[],
  marker: string,
  cli: (argv: string[], timeoutMs?: number) => ReturnType<typeof runCommand>,
  problems: string[],
  killedRuns: Map<string, number>,
): Promise<void> {
  for (const run of runs) {
    const name = `${run.spec.kind} ${run.runId}`;
    const error = run.ended?.error as { code?: string; message?: string } | null | undefined;
    // The documented crash-loop guard (docs/pi.md): three crash-like worker exits in a row
    // without progress fail the run. Fine when the trial did kill its worker or Pi that often.
    if (
      run.ended?.state === "failed" && error?.code === "workerCrashed" &&
      /stopped \d+ times without progress/.test(error.message ?? "")
    ) {
      totals.crashLoopFailures++;
      if ((killedRuns.get(run.runId) ?? 0) < 3) {
        problems.push(
          `${name} failed workerCrashed after ${
            killedRuns.get(run.runId) ?? 0
          } kills of its worker or Pi: ${error.message}`,
        );
      }
      for (const line of run.spec.kind === "ledger" ? LEDGER_LINES : []) {
        const count = sideCount(run.side, `${line} ${run.tag}`);
        if (count > 1) problems.push(`${name} (crash-looped): ${line} applied ${count} times`);
      }
      continue;
    }
    if (!run.ended) continue;
    if (run.ended.state === "pruned") {
      for (const line of run.spec.kind === "ledger" ? LEDGER_LINES : []) {
        const count = sideCount(run.side, `${line} ${run.tag}`);
        if (count > 1) problems.push(`${name} (pruned): ${line} applied ${count} times`);
      }
      continue;
    }
    if (run.ended.state !== "completed") {
      problems.push(`${name} ended ${run.ended.state}: ${JSON.stringify(run.ended.error)}`);
      continue;
    }
    const expected = run.spec.output?.(run.tag);
    if (expected !== undefined && canonical(run.ended.output) !== canonical(expected)) {
      problems.push(
        `${name} output ${JSON.stringify(run.ended.output)}, expected ${JSON.stringify(expected)}`,
      );
    }
    if (run.spec.kind === "ledger") {
      for (const line of LEDGER_LINES) {
        const count = sideCount(run.side, `${line} ${run.tag}`);
        if (count !== 1) problems.push(`${name}: ${line} applied ${count} times`);
      }
    }
    const notifications = ((run as any).receipt?.notifications ?? []) as any[];
    const byNode = new Map<string, number>();
    for (const n of notifications) byNode.set(n.nodeId, (byNode.get(n.nodeId) ?? 0) + 1);
    if (run.spec.kind === "ledger" || run.spec.kind === "fan") {
      if (byNode.get("tell") !== 1) {
        problems.push(
          `${name}: ${byNode.get("tell") ?? 0} notifications from tell (${
            JSON.stringify(notifications).slice(0, 300)
          })`,
        );
      }
    }
  }
  // Every worker and Pi of an ended run goes; the host may keep none of them.
  const waitEnd = Date.now() + 30_000;
  let children: ProcessInfo[] = [];
  while (Date.now() < waitEnd) {
    children = processesWithEnv(marker).filter((p) => role(p) !== "host");
    if (children.length === 0) break;
    await sleep(250);
  }
  if (children.length > 0) {
    problems.push(
      `left with every run ended: ${
        children.map((p) => `${p.pid} ${role(p)} (ppid ${p.ppid})`).join(", ")
      }`,
    );
  }
  const status = await cli(["host", "status", "--json"]);
  if (status.code !== 0) {
    problems.push(`host status exit ${status.code}: ${status.stderr.slice(-300)}`);
  }
  const doctor = await cli(["doctor", "--json"]);
  if (doctor.code !== 0) problems.push(`doctor exit ${doctor.code}: ${doctor.stdout.slice(-800)}`);
}

/**
 * The schedule's runs: each one the host started holds one firing (one slot), and each that
 * completed appended its line once.
 */
function checkTicks(runs: TrialRun[], side: string, stateDir: string, problems: string[]): void {
  const db = new DatabaseSync(join(stateDir, "state.sqlite"), { readOnly: true });
  try {
    const firings = db.prepare(
      "SELECT run_id AS runId, created_at AS at FROM schedule_firings WHERE run_id IS NOT NULL",
    ).all() as { runId: string; at: number }[];
    const byRun = new Map(firings.map((f) => [f.runId, f]));
    // The schedule keeps its newest 50 settled firings: older runs' firings may be gone.
    const oldestKept = Math.min(...firings.map((f) => f.at));
    const ticks = db.prepare(
      "SELECT run_id AS runId, state, created_at AS at FROM runs WHERE workflow_name = 'tick'",
    ).all() as { runId: string; state: string; at: number }[];
    for (const tick of ticks) {
      if (!byRun.has(tick.runId) && tick.at >= oldestKept) {
        problems.push(`tick ${tick.runId} has no firing`);
      }
      const count = sideCount(side, tick.runId);
      if (tick.state === "completed" && count !== 1) {
        problems.push(`tick ${tick.runId} completed, applied ${count} times`);
      } else if (count > 1) {
        problems.push(`tick ${tick.runId} ${tick.state}, applied ${count} times`);
      }
    }
    const known = new Set(runs.map((run) => run.runId));
    for (const tick of ticks) {
      if (!known.has(tick.runId) && !withPrune) problems.push(`tick ${tick.runId} never listed`);
    }
  } finally {
    db.close();
  }
}

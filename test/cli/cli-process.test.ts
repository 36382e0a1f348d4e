import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliInProcess } from "../support/cli-in-process.ts";
import { ROOT, runCliProcess, spawnCli, type TempHome, tempHome } from "../support/host.ts";
import { queryState } from "../support/state-db.ts";

let home: TempHome;
let project: string;

const cli = (args: string[], timeoutMs = 60_000) => runCliProcess(args, home.env, timeoutMs);

/** Errors are one line, with no stack trace. */
function expectOneLineError(stderr: string): string {
  const lines = stderr.trim().split("\n");
  expect(lines, stderr).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
  return lines[0];
}

beforeAll(() => {
  // One host serves the whole file (a 3 s idle started a new one between slow CLI starts on a
  // loaded machine); afterAll stops it, and a leaked one exits on its own within a minute.
  home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "60000" });
  project = join(home.root, "project");
  mkdirSync(project);
  writeFileSync(
    join(project, "fail.workflow.ts"),
    `import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "fails",
  startAt: "boom",
  nodes: { boom: compute({ run: () => { throw new Error("kaboom"); } }) },
  edges: [],
});
`,
  );
});

/** A workflow whose one pure node waits until the file `gate` exists (bounded). */
function writeGatedWorkflow(dir: string, gate: string): void {
  writeFileSync(
    join(dir, "slow.workflow.ts"),
    `import { existsSync } from "node:fs";
import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "slow",
  startAt: "nap",
  nodes: {
    nap: compute({ run: async () => {
      console.log("napping");
      const deadline = Date.now() + 60_000;
      while (!existsSync(${JSON.stringify(gate)}) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      console.log("woke up");
      return { slept: true };
    } }),
  },
  edges: [],
});
`,
  );
}

afterAll(async () => {
  if (home) {
    await cli(["host", "stop"]);
    await home.cleanup();
  }
});

describe("pi-workflows CLI", () => {
  it("prints its version and help", async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    const version = await cli(["--version"]);
    expect(version).toMatchObject({ code: 0, stdout: `${pkg.version} (from source)\n` });
    // The rest in this process (the CLI's entry, runCli): the same code, without a Node start each.
    const json = JSON.parse((await runCliInProcess(["--version", "--json"], home.env)).stdout);
    expect(json).toEqual({
      build: "source",
      commit: null,
      date: null,
      dirty: false,
      version: pkg.version,
    });
    const help = await runCliInProcess(["--help"], home.env);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage:");
    expect(help.stdout).toContain("Exit codes:");
    const startHelp = await runCliInProcess(["start", "--help"], home.env);
    expect(startHelp.stdout).toContain("--input-json JSON");
  });

  it("exits 2 with one line for usage errors", async () => {
    // The first through the CLI's own process, the others in this one (runCli).
    const missing = join(home.root, "no-such-dir");
    for (
      const args of [
        ["bogus"],
        ["start"],
        ["status"],
        ["list", "--frob"],
        ["host", "jump"],
        // Listed the built-ins as if the directory were an empty project.
        ["workflows", "--cwd", missing],
      ]
    ) {
      const result = args[0] === "bogus" ? await cli(args) : await runCliInProcess(args, home.env);
      expect(result.code, args.join(" ")).toBe(2);
      expect(expectOneLineError(result.stderr)).toMatch(/^[A-Z].*[^.]$/);
    }
    expect((await runCliInProcess(["workflows", "--cwd", missing], home.env)).stderr.trim())
      .toBe(`Invalid --cwd: not a directory: ${missing}`);
  });

  it("exits 4 when the host cannot be reached or started", async () => {
    const stopped = await cli(["host", "status"]);
    expect(stopped.code).toBe(4);
    expect(stopped.stdout).toContain("host: stopped");

    const blocked = tempHome();
    try {
      writeFileSync(join(blocked.root, "file"), "not a directory");
      const env = { ...blocked.env, PI_WORKFLOWS_STATE_DIR: join(blocked.root, "file", "state") };
      const result = await runCliProcess(["status", "run-1"], env, 60_000);
      expect(result.code).toBe(4);
      expect(expectOneLineError(result.stderr)).toMatch(/^Host unavailable: /);
    } finally {
      await blocked.cleanup();
    }
  });

  // Each CLI process costs a Node start (0.6 s alone, 3-8 s at load 15 on 2 cores): the
  // endings below run in this process after the first two, and the ASCII case is a test of
  // its own; as one test of 12 processes it took 68-72 s at load 15.5 (17 s at load 10).
  it("runs workflows to their end and reports each ending with its exit code", async () => {
    // Through the CLI's own process (it starts the host): an ending and its exit code, 0 and 6.
    const hello = await cli([
      "start",
      "examples/hello.workflow.ts",
      "Ada",
      "--cwd",
      ROOT,
      "--wait",
    ]);
    expect(hello.code, hello.stderr).toBe(0);
    expect(hello.stdout).toContain("▶ greet");
    expect(hello.stdout).toContain("✓ finish");
    expect(hello.stdout).toMatch(/^✓ completed {2}run-[0-9a-f]{8} {2}hello · 3 nodes · \S+$/m);

    const failed = await cli(["start", "fail.workflow.ts", "--cwd", project, "--wait"]);
    expect(failed.code).toBe(6);
    expect(failed.stdout).toMatch(/^✗ failed {2}run-[0-9a-f]{8} {2}fails · 1 node · \S+$/m);
    expect(failed.stdout).toContain("kaboom");

    // The rest in this process (runCli, what the CLI's entry calls): the same code and codes.
    const cliHere = (args: string[]) => runCliInProcess(args, home.env);
    const json = await cliHere([
      "start",
      "examples/hello.workflow.ts",
      "--input-json",
      '{"name":"Grace"}',
      "--cwd",
      ROOT,
      "--wait",
      "--json",
    ]);
    expect(json.code, json.stderr).toBe(0);
    const done = JSON.parse(json.stdout);
    expect(done.run).toMatchObject({ state: "completed", output: { message: "Hello, Grace!" } });

    const waiting = await cliHere([
      "start",
      "examples/human-decision.workflow.ts",
      "--cwd",
      ROOT,
      "--wait",
    ]);
    expect(waiting.code).toBe(7);
    expect(waiting.stdout).toMatch(/^⏸ waiting for owner {2}run-[0-9a-f]{8} {2}human-decision/m);
    expect(waiting.stdout).toMatch(/^next: pi-workflows answer run-[0-9a-f]{8} approve\|reject/m);

    const missing = await cliHere(["start", "nope.workflow.ts", "--cwd", project]);
    expect(missing.code).toBe(3);
    expectOneLineError(missing.stderr);
  });

  it("prints ASCII only in a locale that is not UTF-8", async () => {
    // Glyphs, punctuation, the viewer's drawing and workflow text (as `?`); JSON keeps every
    // character as a \u escape. Each command in a process of its own: the process's output
    // follows its locale (processIo).
    const c = { ...home.env, LC_ALL: "C" };
    const ascii = async (args: string[]) => {
      const result = await runCliProcess(args, c, 60_000);
      expect(result.stdout + result.stderr, args.join(" ")).not.toMatch(/[\u0080-\uffff]/);
      return result;
    };
    const zoe = await ascii([
      "start",
      "examples/hello.workflow.ts",
      "Zoë",
      "--cwd",
      ROOT,
      "--wait",
    ]);
    expect(zoe.code, zoe.stderr).toBe(0);
    expect(zoe.stdout).toMatch(/^\+ completed {2}run-[0-9a-f]{8} {2}hello - 3 nodes - \S+$/m);
    const id = /run-[0-9a-f]{8}/.exec(zoe.stdout)![0];
    expect((await ascii(["status", id])).stdout).toContain("Zo?");
    const asJson = JSON.parse((await ascii(["status", id, "--json"])).stdout);
    expect(JSON.stringify(asJson.run.output)).toContain("Zoë");
    await ascii(["list", "--all"]);
    await ascii(["view", "--once", "--all"]);
    expect((await ascii(["view", "--once", id])).stdout).toMatch(/\+-{5,}/);
    await ascii(["doctor"]);
  });

  it("shows what a step prints: live in --wait, with logs and logs --follow, secrets redacted", async () => {
    const gate = join(home.root, "logs-gate");
    const secret = "ghp_logsSecret0123456789";
    const command = `echo "token=$GITHUB_TOKEN"; echo oops >&2; echo "waiting for the gate"; ` +
      `while [ ! -f ${gate} ]; do sleep 0.05; done; echo "after the gate"`;
    writeFileSync(
      join(project, "chatty.workflow.ts"),
      `import { defineWorkflow, shell } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "chatty", startAt: "build",
  nodes: { build: shell({ exec: () => ({ shell: true, command: ${JSON.stringify(command)} }) }) },
  edges: [],
});
`,
    );
    const env = { ...home.env, GITHUB_TOKEN: secret };
    const args = [
      "start",
      "chatty.workflow.ts",
      "--cwd",
      project,
      "--env",
      "GITHUB_TOKEN",
      "--wait",
    ];
    const wait = spawnCli(args, env);
    await wait.waitForStdout("build: waiting for the gate", 30_000);
    const runId = /run-[0-9a-f]{8}/.exec(wait.stdout())![0];
    const follow = spawnCli(["logs", runId, "--follow"], home.env);
    await follow.waitForStdout("waiting for the gate", 30_000);
    const once = await cli(["logs", runId, "build"]);
    expect(once.code, once.stderr).toBe(0);
    expect(once.stdout).toContain("-- build (shell, step 1) running\n  | token=[redacted]\n");
    expect(once.stdout).toContain("  ! oops\n");
    writeFileSync(gate, "");
    expect((await wait.exited).code).toBe(0);
    expect((await follow.exited).code).toBe(0);
    expect(follow.stdout()).toContain("  | waiting for the gate\n");
    expect(follow.stdout()).toContain("  | after the gate\n-- build ok\n");
    // (The run's output is the shell result the workflow returns: its data, printed as it is.)
    const progress = wait.stdout().split("\n").filter((l) => !l.startsWith("{")).join("\n");
    for (const text of [progress, follow.stdout(), once.stdout]) expect(text).not.toContain(secret);
    const json = JSON.parse((await cli(["logs", runId, "--json"])).stdout);
    expect(json.steps[0].streams.map((s: { stream: string }) => s.stream)).toEqual([
      "stdout",
      "stderr",
    ]);

    // Commands an action runs itself with runCommandBatch print into the step's output too,
    // each line labelled with its item id (concurrent commands never mix inside a line).
    writeFileSync(
      join(project, "batch.workflow.ts"),
      `import { action, defineWorkflow, runCommandBatch } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "batch", startAt: "checks",
  nodes: { checks: action({ run: async ({ signal }) => {
    const sh = (id: string, script: string) =>
      ({ id, command: "sh", args: ["-c", script], cwd: process.cwd(), timeoutMs: 10_000 });
    const r = await runCommandBatch(
      { items: [sh("lint", "echo lint ok; echo warned >&2"), sh("unit", "printf '3 passed'")] },
      { signal },
    );
    return { outcomes: r.items.map((i) => i.outcome) };
  } }) },
  edges: [],
});
`,
    );
    const batch = await cli(["start", "batch.workflow.ts", "--cwd", project, "--wait"]);
    expect(batch.code, batch.stderr + batch.stdout).toBe(0);
    const batchId = /run-[0-9a-f]{8}/.exec(batch.stdout)![0];
    const batchLogs = await cli(["logs", batchId]);
    expect(batchLogs.stdout).toContain("  | [lint] lint ok\n");
    expect(batchLogs.stdout).toContain("  ! [lint] warned\n");
    expect(batchLogs.stdout).toContain("  | [unit] 3 passed\n");
    // A node the workflow does not have is refused with the ones it has: an empty answer read as
    // "(no output: the steps printed nothing ...)".
    const typo = await cli(["logs", batchId, "chekcs"]);
    expect([typo.code, typo.stdout]).toEqual([3, ""]);
    expect(typo.stderr).toContain(
      `workflow has no node "chekcs"; its nodes: checks. Did you mean "checks"?`,
    );
  });

  it("shows, lists, pauses, resumes and cancels runs", async () => {
    const started = await cli([
      "start",
      "examples/human-decision.workflow.ts",
      "--cwd",
      ROOT,
      "--json",
    ]);
    expect(started.code, started.stderr).toBe(0);
    const runId = JSON.parse(started.stdout).run.runId as string;
    // The start above left the host running (it idles for a minute): the commands below run in
    // this process (the CLI's entry, runCli), the same code without a Node start each.
    const cliHere = (args: string[]) => runCliInProcess(args, home.env);

    // JSON nested past 200 levels is refused wherever a command takes it, before anything is
    // sent: one line, exit 2, nothing stored.
    const deep = `${"[".repeat(201)}${"]".repeat(201)}`;
    const deepObject = `${'{"a":'.repeat(201)}0${"}".repeat(201)}`;
    // `answer` reads what the run waits for first: follow it until it waits for a person.
    const waits = await cliHere(["status", runId, "--wait"]);
    expect(waits.code, waits.stderr).toBe(7);
    const runsBefore = (await cliHere(["list", "--all", "--json"])).stdout;
    for (
      const args of [
        ["start", "examples/hello.workflow.ts", "--cwd", ROOT, "--input-json", deep],
        ["rerun", runId, "--input-json", deep],
        ["answer", runId, deepObject],
        ["effect", "resolve", runId, "attempt-1", "--applied", deep],
        ["schedule", "add", "deep", "echo", "--every", "1h", "--input-json", deep],
        ["controller", "apply", "sync", "k", "--spec-json", deep],
      ]
    ) {
      const refused = await cliHere(args);
      expect([refused.code, refused.stdout], args.slice(0, 2).join(" ")).toEqual([2, ""]);
      expect(expectOneLineError(refused.stderr)).toMatch(
        /^Invalid [-\w ]+: nested deeper than 200 arrays or objects; send a flatter value/,
      );
    }
    expect((await cliHere(["list", "--all", "--json"])).stdout).toBe(runsBefore);

    const status = await cliHere(["status", runId, "--json"]);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout).run.runId).toBe(runId);
    const text = await cliHere(["status", runId]);
    expect(text.stdout).toContain(`run ${runId}`);

    const list = await cliHere(["list", "--json"]);
    expect(JSON.parse(list.stdout).runs.map((r: { runId: string }) => r.runId)).toContain(runId);

    const pause = await cliHere(["pause", runId]);
    expect(pause.code, pause.stderr).toBe(0);
    expect(pause.stdout).toMatch(/^Paused /);
    const resume = await cliHere(["resume", runId, "--json"]);
    expect(resume.code, resume.stderr).toBe(0);
    expect(JSON.parse(resume.stdout).run.paused).toBe(false);
    const resumeWaiting = await cliHere(["resume", runId]);
    expect(resumeWaiting.code).toBe(3);
    expect(expectOneLineError(resumeWaiting.stderr)).toBe(
      `Host answered rejected: Cannot resume run ${runId}: it is waiting for input, not paused ` +
        `or blocked: 'pi-workflows status ${runId}' says what it waits for`,
    );
    const cancel = await cliHere(["cancel", runId]);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toMatch(/^Cancelled /);

    // Refusals say what happened and what to do, in words (no `cancelled/cancelled`).
    const again = await cliHere(["cancel", runId]);
    expect(again.code).toBe(3);
    expect(expectOneLineError(again.stderr)).toBe(
      `Host answered rejected: Cannot cancel run ${runId}: it has ended (cancelled)`,
    );
    const resumeEnded = await cliHere(["resume", runId]);
    expect(resumeEnded.code).toBe(3);
    expect(expectOneLineError(resumeEnded.stderr)).toBe(
      `Host answered rejected: Cannot resume run ${runId}: it has ended (cancelled) and does ` +
        `not run again; 'pi-workflows rerun ${runId}' starts a new run from it`,
    );
    const unknown = await cliHere(["status", "run-unknown"]);
    expect(unknown.code).toBe(3);
    expect(expectOneLineError(unknown.stderr)).toContain(
      "Unknown run: no run id starts with 'run-unknown'",
    );
  });

  it("starts exactly one host when several clients need it at once", async () => {
    // Long enough that a loaded machine's slow CLI starts never let the host idle out between
    // the steps below; `finally` stops it.
    const fresh = tempHome({
      PI_WORKFLOWS_HOST_IDLE_MS: "60000",
      PI_WORKFLOWS_HOST_LOG_BYTES: "150",
    });
    try {
      const results = await Promise.all(
        [0, 1, 2, 3].map(() => runCliProcess(["list", "--json"], fresh.env, 60_000)),
      );
      for (const result of results) expect(result.code, result.stderr).toBe(0);
      // What asks the running host goes through the CLI's entry here (runCli): each Node start is
      // seconds on a loaded machine, and only the starts above and below are what this proves.
      const status = await runCliInProcess(["host", "status", "--json"], fresh.env);
      expect(JSON.parse(status.stdout)).toMatchObject({ state: "running", epoch: 1 });
      const log = readFileSync(join(fresh.stateDir, "host.log"), "utf8");
      expect(log.match(/host\.ready/g)).toHaveLength(1);
      // One start at a time: no second host was even tried (it would have been refused).
      expect(log).not.toMatch(/already running/i);

      const again = await runCliInProcess(["host", "start", "--json"], fresh.env);
      expect(JSON.parse(again.stdout)).toEqual({ alreadyRunning: true, epoch: 1, started: false });
      const stop = await runCliInProcess(["host", "stop", "--json"], fresh.env);
      expect(JSON.parse(stop.stdout)).toEqual({ epoch: 1, stopped: true, wasRunning: true });
      // "Stopped" means released: a start right after is never refused by the old holder.
      expect(queryState(fresh.stateDir, "SELECT token_hash FROM host_claim")).toEqual([
        { token_hash: null },
      ]);
      const start = await runCliProcess(["host", "start"], fresh.env);
      expect(start).toMatchObject({ code: 0, stdout: "Host started (epoch 2)\n" });
      // The log stays bounded: past its budget it says so and stops, and the next start rotates it.
      expect(readFileSync(join(fresh.stateDir, "host.log.1"), "utf8")).toContain("log.limit");
      expect(readFileSync(join(fresh.stateDir, "host.log"), "utf8")).toContain("epoch=2");
    } finally {
      await runCliInProcess(["host", "stop"], fresh.env);
      await fresh.cleanup();
    }
  });

  it("keeps following a run across a host restart", async () => {
    const fresh = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "60000" });
    try {
      const gate = join(fresh.root, "gate");
      writeGatedWorkflow(fresh.root, gate);
      const follower = spawnCli(
        ["start", "slow.workflow.ts", "--cwd", fresh.root, "--wait"],
        fresh.env,
      );
      await follower.waitForStdout("▶ nap", 60_000);
      const runId = /run-[0-9a-f]{8}/.exec(follower.stdout())![0];
      const logs = spawnCli(["logs", runId, "--follow"], fresh.env);
      await logs.waitForStdout("  | napping", 60_000);
      // Stop the host under the follower (the pure node is parked at once, a planned stop
      // waits only for external nodes): the run parks, the follower starts the next host,
      // whose worker finds the gate open.
      const stop = await runCliProcess(["host", "stop"], fresh.env);
      expect(stop.code, stop.stderr).toBe(0);
      writeFileSync(gate, "open");
      const { code } = await follower.exited;
      expect(code, follower.stderr()).toBe(0);
      // logs --follow reconnects too, says so once, and goes on where it was: the first
      // attempt's line is not printed again, the second attempt's lines come.
      expect((await logs.exited).code, logs.stderr()).toBe(0);
      expect(logs.stderr()).toMatch(
        /^logs: the host went away; reconnecting to follow run-\S+ on \(1 of 3\)$/m,
      );
      expect(logs.stdout()).toContain("  | woke up\n");
      expect(logs.stdout().match(/ {2}\| napping\n/g)?.length, logs.stdout()).toBe(2);
      expect(follower.stdout()).toMatch(/^✓ completed {2}run-/m);
      expect(follower.stdout()).toContain('{"slept":true}');
      const status = await runCliProcess(["host", "status", "--json"], fresh.env);
      expect(JSON.parse(status.stdout).epoch).toBe(2);
    } finally {
      await runCliProcess(["host", "stop"], fresh.env);
      await fresh.cleanup();
    }
  });

  it("checks the state with doctor", async () => {
    // Checked with the host stopped: a live host keeps writing between doctor's queries.
    expect((await cli(["host", "stop"])).code).toBe(0);
    const ok = await cli(["doctor"]);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toContain("Invariants: all hold");
    const json = await cli(["doctor", "--json"]);
    expect(JSON.parse(json.stdout).ok).toBe(true);

    const broken = tempHome();
    try {
      mkdirSync(broken.stateDir, { recursive: true, mode: 0o700 });
      writeFileSync(join(broken.stateDir, "state.sqlite"), "this is not a database at all");
      const result = await runCliProcess(["doctor"], broken.env);
      expect(result.code).toBe(5);
      // The problem right after the file; the schema line below it is what this build expects.
      expect(result.stdout).toMatch(
        /^State file: .*\nProblem: .*\n(Mode: .*\n)*This build reads: /,
      );
      expect(result.stdout).not.toMatch(/^Schema: /m);
    } finally {
      await broken.cleanup();
    }
  });
});

/**
 * The CLI's terminal conventions against a real host: run-id prefixes, `--wait` progress (plain
 * lines when piped, one redrawn line in a pseudo-terminal), NO_COLOR/FORCE_COLOR, LC_ALL=C, a
 * closed pipe, resolver errors that name file and step, and bash completion.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCompletionRequest } from "../../src/cli/completion-command.ts";
import { runCliInProcess } from "../support/cli-in-process.ts";
import { seedRuns } from "../support/host-seed.ts";
import {
  CLI,
  NODE_ARGS,
  ROOT,
  runCliProcess,
  spawnCli,
  type TempHome,
  tempHome,
} from "../support/host.ts";

let home: TempHome;
let project: string;
const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  runCliProcess(args, { ...home.env, ...env }, 60_000);
/**
 * The same in this process (the CLI's entry, runCli), for what does not depend on the process's
 * own terminal or locale: no Node start each. Only while the file's host runs (`hostRunning`):
 * a host is started by the CLI's own process, never from the test's.
 */
const cliHere = (args: string[]) => runCliInProcess(args, home.env);
async function hostRunning(): Promise<void> {
  if ((await cliHere(["host", "status"])).code === 0) return;
  expect((await cli(["host", "start"])).code).toBe(0);
}

const PROGRESS = `import { action, compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "progress",
  startAt: "copy",
  nodes: {
    copy: action({
      statusDetail: "copy the files",
      run: async ({ publishUpdate }) => {
        for (let i = 1; i <= 5; i++) {
          await new Promise((r) => setTimeout(r, 250));
          publishUpdate({ type: "progress", key: "files", data: {
            schema: "pi-workflows.progress.v1", completed: i, total: 5, unit: "files" } });
        }
        return { copied: 5 };
      },
    }),
    done: compute({ run: () => "ok" }),
  },
  edges: [{ from: "copy", to: "done" }],
});
`;

beforeAll(() => {
  home = tempHome({
    // Long enough that the host outlives the slow steps of a loaded machine between requests.
    PI_WORKFLOWS_HOST_IDLE_MS: "60000",
    PI_WORKFLOWS_WORKER_STARTUP_MS: "8000",
    LANG: "C.UTF-8",
    LC_ALL: "",
    NO_COLOR: "",
    FORCE_COLOR: "",
  });
  project = join(home.root, "project");
  mkdirSync(join(project, ".pi", "workflows"), { recursive: true });
  writeFileSync(join(project, ".pi", "workflows", "progress.workflow.ts"), PROGRESS);
  writeFileSync(
    join(project, "exits.workflow.ts"),
    `import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
process.exit(3);
export default defineWorkflow({ name: "exits", startAt: "a", nodes: { a: compute({ run: () => 1 }) } });
`,
  );
  writeFileSync(
    join(project, "gated.workflow.ts"),
    `import { existsSync } from "node:fs";
import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "gated",
  startAt: "gate",
  nodes: {
    gate: compute({ statusDetail: "wait for the gate", run: async () => {
      const deadline = Date.now() + 60_000;
      while (!existsSync(${
      JSON.stringify(join(home.root, "follow-gate"))
    }) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      return "ok";
    } }),
  },
  edges: [],
});
`,
  );
  writeFileSync(
    join(project, "hangs.workflow.ts"),
    `import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "hangs", input: () => { for (;;) {} }, startAt: "a", nodes: { a: compute({ run: () => 1 }) },
});
`,
  );
});

afterAll(async () => {
  if (home) {
    await cli(["host", "stop"]);
    await home.cleanup();
  }
});

describe("start --wait", () => {
  it("prints plain progress lines when piped: numbers, rate, ETA, status detail, elapsed time, summary", async () => {
    const result = await cli(["start", "progress", "--cwd", project, "--wait"]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^Started run-[0-9a-f]{8} {2}progress {2}queued$/);
    expect(lines[1]).toBe("▶ copy · copy the files");
    const progress = lines.filter((l) => l.startsWith("  · copy "));
    // Updates 250 ms apart, at most one line a second, and always the last one.
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.length).toBeLessThanOrEqual(4);
    expect(progress[0]).toBe("  · copy 1/5 files 20%");
    expect(progress.at(-1)).toMatch(/^ {2}· copy 5\/5 files 100% · \d+(\.\d)?\/s$/);
    for (const line of progress.slice(1, -1)) {
      expect(line).toMatch(/^ {2}· copy [234]\/5 files \d+% · \d+(\.\d)?\/s · ETA \S+$/);
    }
    expect(lines).toContainEqual(expect.stringMatching(/^✓ copy {2}\d+(\.\d)?s$/));
    // The host stamps a node's events as it commits them: on a loaded machine even a compute
    // node's span may pass a second (`1.2s`, formatDuration).
    expect(lines).toContainEqual(expect.stringMatching(/^✓ done {2}(\d+ms|\d+(\.\d)?s)$/));
    expect(lines.at(-2)).toMatch(/^✓ completed {2}run-[0-9a-f]{8} {2}progress · 2 nodes · \S+$/);
    expect(lines.at(-1)).toBe("ok");
  });

  it("status --wait follows a run this command did not start, and one that already ended", async () => {
    // The run waits for a gate file, opened only once the follower is following: never ended first.
    const gate = join(home.root, "follow-gate");
    const started = await cli(["start", "gated.workflow.ts", "--cwd", project, "--json"]);
    expect(started.code, started.stderr).toBe(0);
    const id = JSON.parse(started.stdout).run.runId as string;
    const follower = spawnCli(["status", id.slice(0, 12), "--wait"], home.env);
    let exit;
    try {
      await follower.waitForStdout("Following", 30_000);
      writeFileSync(gate, "");
      exit = await follower.exited;
    } finally {
      follower.kill();
    }
    expect(exit.code, follower.stderr()).toBe(0);
    const lines = follower.stdout().trimEnd().split("\n");
    expect(lines[0]).toMatch(/^Following run-[0-9a-f]{8} {2}gated {2}(queued|running)$/);
    expect(lines).toContain("▶ gate · wait for the gate");
    expect(lines.at(-2)).toMatch(/^✓ completed {2}run-[0-9a-f]{8} {2}gated · 1 node · /);
    expect(lines.at(-1)).toBe("ok");
    // Ended already: the same history, the same summary, the same exit code, at once.
    const again = await cli(["status", id, "--wait", "--json"]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).run).toMatchObject({ runId: id, state: "completed" });
  });

  it("redraws one live line on a terminal, with colour unless NO_COLOR", () => {
    if (!existsSync("/usr/bin/script")) throw new Error("this test needs util-linux `script`");
    const run = (env: NodeJS.ProcessEnv) =>
      execFileSync("script", [
        "-qfec",
        `stty cols 120; "${process.execPath}" "${CLI}" start progress --cwd "${project}" --wait`,
        "/dev/null",
      ], { cwd: ROOT, env: { ...home.env, ...env }, encoding: "utf8", timeout: 60_000 });
    const colored = run({});
    expect(colored).toContain("\r\x1b[2K\x1b[33m◐\x1b[0m copy");
    expect(colored).toMatch(/\[█+░*\] 1\/5 files 20%/);
    expect(colored).toContain("\x1b[32m✓\x1b[0m copy");
    // The node start is not a line of its own on a terminal: the live line shows it.
    expect(colored).not.toContain("▶ copy");
    const plain = run({ NO_COLOR: "1" });
    // deno-lint-ignore no-control-regex -- no colour escapes at all
    expect(plain).not.toMatch(/\x1b\[[0-9;]*m/);
    expect(plain).toContain("\r\x1b[2K◐ copy");
    expect(plain).toMatch(/✓ completed {2}run-[0-9a-f]{8} {2}progress · 2 nodes/);
  });

  it("uses ASCII glyphs under LC_ALL=C and colour into a pipe with FORCE_COLOR", async () => {
    const ascii = await cli(["start", "echo", "hi", "--wait"], { LC_ALL: "C" });
    expect(ascii.code, ascii.stderr).toBe(0);
    expect(ascii.stdout).toMatch(/^> echo - echo$/m);
    expect(ascii.stdout).toMatch(/^\+ completed {2}run-[0-9a-f]{8} {2}echo - 1 node - \S+$/m);
    // deno-lint-ignore no-control-regex -- ASCII only
    expect(ascii.stdout).not.toMatch(/[^\x00-\x7f]/);
    const forced = await cli(["start", "echo", "hi", "--wait"], { FORCE_COLOR: "1" });
    expect(forced.stdout).toContain("\x1b[32m✓\x1b[0m echo");
  });

  it("shows control characters of workflow text as escapes: titles, details, errors, notices", async () => {
    const esc = "\\u001b";
    writeFileSync(
      join(project, ".pi", "workflows", "noisy.workflow.ts"),
      `import { compute, defineWorkflow, notify } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "noisy",
  title: "T${esc}[2J\\nsecond\\rline",
  input: (raw) => { if (raw?.task === "bad") throw new Error("no ${esc}]52;c;cGF5bG9hZA==\\u0007 here"); return raw; },
  startAt: "a",
  nodes: {
    a: notify({ message: "msg ${esc}]0;pwned\\u0007 \\u202eevil" }),
    f: compute({ run: () => { throw new Error("bad ${esc}[41mthing\\r"); } }),
  },
  edges: [{ from: "a", to: "f" }],
});
`,
    );
    const wait = await cli(["start", "noisy", "--cwd", project, "--wait"], { FORCE_COLOR: "1" });
    expect(wait.code, wait.stderr).toBe(6);
    const id = /run-[0-9a-f]{8}/.exec(wait.stdout)![0];
    const status = await cli(["status", id], { FORCE_COLOR: "1" });
    const list = await cli(["list", "--all"]);
    const refused = await cli(["start", "noisy", "bad", "--cwd", project]);
    expect(refused.code).toBe(3);
    for (const out of [wait.stdout, status.stdout, list.stdout, refused.stderr]) {
      // Only the CLI's own colours are left; every other control character is shown escaped.
      // deno-lint-ignore no-control-regex -- the CLI's own colours
      const bare = out.replace(/\x1b\[(?:0|1|2|31|32|33|35|36)m/g, "");
      // deno-lint-ignore no-control-regex -- nothing that acts on a terminal
      expect(bare).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]/);
    }
    // The title is one line; the error and the notice keep their text, escaped.
    expect(list.stdout).toMatch(/noisy — T \[2J second line \(nodeFailed\)/);
    expect(status.stdout).toContain("bad \\u001b[41mthing");
    expect(status.stdout).toContain("msg \\u001b]0;pwned\\u0007 \\u202eevil");
    expect(refused.stderr).toContain("no \\u001b]52;c;cGF5bG9hZA==\\u0007 here");
  });

  it("exits quietly when its reader closes the pipe", async () => {
    const child = spawn(process.execPath, [CLI, "start", "progress", "--cwd", project, "--wait"], {
      cwd: ROOT,
      env: home.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    // Like `| head -1`: read the first line, then close the pipe.
    await new Promise<void>((resolve) => {
      child.stdout.once("data", () => {
        child.stdout.destroy();
        resolve();
      });
    });
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(stderr).toBe("");
    expect(code).toBe(141);
  });
});

describe("run ids", () => {
  it("accepts any unique prefix and names the candidates of an ambiguous one", async () => {
    await hostRunning();
    const started = JSON.parse((await cliHere(["start", "echo", "--json"])).stdout).run.runId;
    await cliHere(["start", "echo", "--json"]);
    const hex = started.slice(4, 10);
    for (const typed of [hex, `run-${hex}`, started]) {
      const status = await cliHere(["status", typed, "--json"]);
      expect(status.code, `${typed}: ${status.stderr}`).toBe(0);
      expect(JSON.parse(status.stdout).run.runId).toBe(started);
    }
    const text = await cliHere(["status", hex]);
    expect(text.stdout.split("\n")[0]).toBe(`run ${started}`);
    const ambiguous = await cliHere(["status", "run-"]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(
      // The newest candidate comes first; earlier tests in this file leave other workflows' runs.
      /^Run id 'run-' is ambiguous: (more than )?\d+ runs match \(run-[0-9a-f]{8,} \([\w-]+, \w+\), .*\): type more of it\n$/,
    );
    const none = await cliHere(["cancel", "ffffffffffff"]);
    expect(none.code).toBe(3);
    expect(none.stderr).toContain("no run id starts with 'ffffffffffff'");
  });
});

describe("resolver errors", () => {
  it("name the file and the step that crashed or hung", async () => {
    await hostRunning();
    const crashed = await cliHere(["start", "exits.workflow.ts", "--cwd", project]);
    expect(crashed.code).toBe(3);
    expect(crashed.stderr.trim()).toBe(
      `Host answered rejected: Workflow not resolved: the resolver exited with code 3 while ` +
        `loading ${join(home.root, "project", "exits.workflow.ts")} (its top-level code)`,
    );
    const hung = await cliHere(["start", "hangs.workflow.ts", "--cwd", project]);
    expect(hung.code).toBe(3);
    expect(hung.stderr).toContain(
      `running the input function of ${
        join(project, "hangs.workflow.ts")
      } did not finish within 8000 ms`,
    );
  });
});

describe("completion", () => {
  it("completes commands, options, workflow names and run ids in bash, never starting a host", async () => {
    // A state directory of its own with one run in it, so the case stands alone (-t) and needs
    // no run started (the file's earlier cases leave theirs in the file's).
    const own = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "60000" });
    seedRuns(own.stateDir, [{ runId: "run-c0ffee01-0000-4000-8000-000000000000" }]);
    const script = (await runCliInProcess(["completion", "bash"], own.env)).stdout;
    // Each <Tab> is a Node start: it records the modules it loads, to show it skips the parser.
    const loads = join(own.root, "completion-loads");
    const recorder = join(own.root, "record-loads.mjs");
    writeFileSync(
      recorder,
      `import { appendFileSync } from "node:fs";
import { registerHooks } from "node:module";
registerHooks({ load(url, context, next) {
  appendFileSync(${JSON.stringify(loads)}, url + "\\n");
  return next(url, context);
} });
`,
    );
    const node = [process.execPath, ...NODE_ARGS, "--import", recorder, CLI].map((a) => `"${a}"`)
      .join(" ");
    const complete = (line: string) => {
      const words = line.split(" ");
      const program = `pi-workflows() { ${node} "$@"; }
${script}
COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}
_pi_workflows; printf '%s\\n' "\${COMPREPLY[@]}"`;
      return execFileSync("bash", ["-c", program], {
        cwd: project,
        env: own.env,
        encoding: "utf8",
        timeout: 30_000,
      }).split("\n").filter(Boolean);
    };
    let stopped = false;
    try {
      expect(complete("pi-workflows st")).toEqual(["start", "status"]);
      expect(complete("pi-workflows start --w")).toEqual(["--wait"]);
      expect(complete("pi-workflows start pro")).toContain("progress");
      expect(complete("pi-workflows start ec")).toEqual(["echo"]);
      expect(complete("pi-workflows host st")).toEqual(["start", "status", "stop"]);
      expect(complete("pi-workflows answer r --choice ")).toEqual([]);
      expect((await runCliProcess(["host", "start"], own.env, 60_000)).code).toBe(0);
      expect(complete("pi-workflows status run-")).toEqual(["run-c0ffee01"]);

      expect((await runCliInProcess(["host", "stop"], own.env)).code).toBe(0);
      stopped = true;
      expect(complete("pi-workflows status run-")).toEqual([]);
      const status = await runCliInProcess(["host", "status"], own.env);
      expect(status.stdout).toContain("host: stopped");
      // Four completions asked the program, and none loaded the command parser (every command's
      // options and schemas: most of the CPU of such a start from source).
      const loaded = readFileSync(loads, "utf8").split("\n");
      expect(loaded.filter((url) => url.endsWith("/src/cli/complete-words.ts"))).toHaveLength(4);
      expect(loaded.filter((url) => url.endsWith("/src/cli/parse-command.ts"))).toEqual([]);
    } finally {
      if (!stopped) await runCliProcess(["host", "stop"], own.env, 60_000);
      await own.cleanup();
    }
  });

  it("prints a zsh script and refuses other shells", async () => {
    const zsh = await cliHere(["completion", "zsh"]);
    expect(zsh.stdout.split("\n")[0]).toBe("#compdef pi-workflows");
    if (existsSync("/usr/bin/zsh") || existsSync("/bin/zsh")) {
      // zsh's completion builtins stubbed to print what they are given.
      const program = `compdef() { :; }
_describe() { local name=$2; print -l -- "\${(@P)name}"; }
compadd() { shift; print -l -- "$@"; }
_files() { print -- "<files $*>"; }
pi-workflows() { "${process.execPath}" "${CLI}" "$@"; }
${zsh.stdout}
words=(pi-workflows start --w); CURRENT=3; _pi-workflows; print -- ---
words=(pi-workflows start ec); CURRENT=3; _pi-workflows; print -- ---
words=(pi-workflows host s); CURRENT=3; _pi-workflows`;
      const out = execFileSync("zsh", ["-c", program], {
        cwd: project,
        env: home.env,
        encoding: "utf8",
        timeout: 30_000,
      });
      const [flags, workflows, host] = out.split("---\n");
      expect(flags).toContain("--wait\n");
      expect(workflows).toContain("echo:built-in: Returns its input unchanged\n");
      expect(workflows).toContain("progress:project workflow\n");
      expect(host).toBe("run\nstart\nstatus\nstop\n");
    }
    const bad = await cliHere(["completion", "fish"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe("Unknown shell 'fish' for 'completion': use bash or zsh\n");
  });

  it("refuses a bad __complete request in one line", async () => {
    // main.ts runs \`__complete\` through runCompletionRequest alone: its catch is all there is.
    const lines: string[] = [];
    const io = {
      out: (text: string) => lines.push(`out ${text}`),
      err: (text: string) => lines.push(text),
    };
    expect(await runCompletionRequest(["bogus"], io, home.env)).toBe(2);
    expect(lines).toEqual(["Unknown completion request: use 'workflows' or 'runs'"]);
  });
});

/**
 * `pi -p <prompt>` (print mode) with the package installed: Pi answers and exits on its own, as it
 * does without the package. Print mode ends only once its event loop is empty, so the extension
 * must leave nothing open after `session_shutdown`; and a plain turn of a user who never ran a
 * workflow starts no host and creates no workflow state. A run cannot start there (its steps
 * would wait for a session that ends with the prompt): `/workflow <name>` and the tool's start
 * refuse with the headless command, and `/workflow` answers on stderr since there is no UI;
 * a refused or failed `/workflow` or `/controller` makes Pi exit 1, so scripts see it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type FakeModel, startFakeModel } from "../support/fake-model.ts";
import { createPiSandbox, PI_CLI, type PiSandbox, REPO_ROOT } from "../support/pi-sandbox.ts";
import { runCliProcess } from "../support/host.ts";
import { queryState } from "../support/state-db.ts";

/** Far above Pi's own time for one text turn (about 1 s); a hang is killed by PID at this bound. */
const EXIT_BOUND_MS = 30_000;

interface PrintRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** True when Pi had not exited by the bound and was SIGKILLed. */
  hung: boolean;
}

function piPrint(sandbox: PiSandbox, prompt: string): Promise<PrintRun> {
  const child = spawn(
    process.execPath,
    [PI_CLI, "-p", "--offline", "--no-session", "--no-context-files", "--no-skills", prompt],
    { cwd: sandbox.project, env: sandbox.env, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk));
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    child.kill("SIGKILL");
  }, EXIT_BOUND_MS);
  return new Promise((resolve) => {
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, hung });
    });
  });
}

describe("pi -p with the package installed", () => {
  let model: FakeModel;
  let sandbox: PiSandbox;

  beforeAll(async () => {
    model = await startFakeModel({
      script: (request) =>
        request.lastUserText === "Start the echo workflow." && request.lastRole === "user"
          ? { kind: "tool", name: "workflow", args: { action: "start", workflow: "echo" } }
          : { kind: "text", text: "Plain answer." },
      lifetimeMs: 180_000,
    });
    sandbox = createPiSandbox({ modelBaseUrl: model.baseUrl });
    await sandbox.install(REPO_ROOT);
  });

  afterAll(async () => {
    await sandbox?.cleanup();
    await model?.close();
  });

  it("answers and exits, starting no host and writing no state, when no workflow ever ran", async () => {
    const run = await piPrint(sandbox, "hello");
    expect(run).toMatchObject({ hung: false, code: 0 });
    expect(run.stdout.trim()).toBe("Plain answer.");
    expect(existsSync(join(sandbox.stateDir, "state.sqlite"))).toBe(false);
    expect(sandbox.hostPids()).toEqual([]);
  });

  it("answers and exits while a host runs and the session links to it", async () => {
    const started = await runCliProcess(
      ["start", "builtin:echo", "--input-json", '{"n": 1}', "--wait"],
      sandbox.env,
      60_000,
    );
    expect(started.code, started.stderr).toBe(0);
    expect(sandbox.hostPids()).toHaveLength(1);
    const run = await piPrint(sandbox, "hello again");
    expect(run).toMatchObject({ hung: false, code: 0 });
    expect(run.stdout.trim()).toBe("Plain answer.");
  });

  it("refuses to start a run whose steps would need the session that ends, saying what to run", async () => {
    const runs = () =>
      existsSync(join(sandbox.stateDir, "state.sqlite"))
        ? queryState(sandbox.stateDir, "SELECT run_id FROM runs").length
        : 0;
    const before = runs();
    const command = await piPrint(sandbox, "/workflow echo some words");
    expect(command).toMatchObject({ hung: false, code: 1 });
    expect(command.stderr).toContain(
      "/workflow: a run started here runs its steps in this Pi session, which ends with this " +
        "prompt (print mode): run it headless instead: pi-workflows start echo --wait",
    );
    const from = model.requests.length;
    const tool = await piPrint(sandbox, "Start the echo workflow.");
    expect(tool).toMatchObject({ hung: false, code: 0 });
    const result = model.requests.slice(from).find((r) => r.lastRole === "tool");
    expect(result?.lastToolResult).toMatch(/^Not started: a run started here runs its steps/);
    expect(runs()).toBe(before);
    const status = await piPrint(sandbox, "/workflow status run-nosuch");
    expect(status.stderr).toContain("/workflow: not found: Unknown run: run-nosuch");
    expect(status.code).toBe(1);
    const controller = await piPrint(sandbox, "/controller get nosuch some-key");
    expect(controller).toMatchObject({ hung: false, code: 1 });
    expect(controller.stderr).toMatch(/^\/controller: /m);
  });
});

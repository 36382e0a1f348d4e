/**
 * `pi -p <prompt>` (print mode) with the package installed: Pi answers and exits on its own, as it
 * does without the package. Print mode ends only once its event loop is empty, so the extension
 * must leave nothing open after `session_shutdown`; and a plain turn of a user who never ran a
 * workflow starts no host and creates no workflow state.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type FakeModel, startFakeModel } from "../support/fake-model.ts";
import { createPiSandbox, PI_CLI, type PiSandbox, REPO_ROOT } from "../support/pi-sandbox.ts";
import { runCliProcess } from "../host/helpers.ts";

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
      script: () => ({ kind: "text", text: "Plain answer." }),
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
});

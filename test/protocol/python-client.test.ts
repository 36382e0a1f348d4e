/**
 * The Python client of docs/protocol.md ("Write a client") against a real host: it starts a run
 * of a real workflow, follows its events and prints the result. Skipped where python3 is absent.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliProcess,
  ROOT,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
} from "../support/host.ts";

const CLIENT = join(ROOT, "examples", "clients", "start_run.py");
const hasPython = spawnSync("python3", ["--version"]).status === 0;

describe.skipIf(!hasPython)("the Python client from the docs", () => {
  let home: TempHome;
  let host: CliProcess;

  beforeAll(async () => {
    home = tempHome();
    host = await startHostProcess(home.env);
  });

  afterAll(async () => {
    if (host) await stopProcess(host);
    await home?.cleanup();
  });

  function runClient(args: string[]) {
    const result = spawnSync("python3", [CLIENT, ...args], {
      cwd: ROOT,
      env: home.env,
      encoding: "utf8",
      timeout: 60_000,
    });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  it("is the code the docs show", () => {
    const docs = readFileSync(join(ROOT, "docs", "protocol.md"), "utf8");
    expect(docs).toContain("```python\n" + readFileSync(CLIENT, "utf8") + "```");
  });

  it("starts a run, follows its events and prints the result", () => {
    const done = runClient(["examples/hello.workflow.ts"]);
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual({
      state: "completed",
      output: { message: "Hello, world!", steps: ["greet", "echo", "finish"] },
      error: null,
    });
    expect(done.stderr).toMatch(/^started run-/);
    for (const line of ["node.started greet", "node.finished echo", "run.completed"]) {
      expect(done.stderr).toContain(line);
    }
  });

  it("prints the host's one-line refusal and exits non-zero", () => {
    const refused = runClient(["examples/missing.workflow.ts"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toMatch(/^run\.start: rejected: Workflow file not found: /);
  });
});

import { cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliProcess,
  ROOT,
  runCliProcess,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
} from "../support/host.ts";
import { seedRuns } from "../support/host-seed.ts";

/** Markers planted in every private place: none may appear in status output or the host log. */
const SECRETS = {
  input: "SECRET-INPUT-7731",
  env: "SECRET-ENV-5520",
  apiKey: "sk-SECRET-KEY-0042",
  path: "SECRET-PATH-9911",
  session: "SECRET-SESSION-4242",
  seededInput: "SECRET-SEEDED-1209",
};

let home: TempHome;
let host: CliProcess;
let project: string;

beforeAll(async () => {
  home = tempHome({
    PI_WORKFLOWS_TEST_SECRET: SECRETS.env,
    OPENAI_API_KEY: SECRETS.apiKey,
  });
  project = join(home.root, SECRETS.path);
  mkdirSync(project);
  cpSync(join(ROOT, "examples"), join(project, "examples"), { recursive: true });
  seedRuns(home.stateDir, [
    {
      runId: "run-interactive",
      input: { task: SECRETS.seededInput },
      projectPath: project,
      originSessionId: SECRETS.session,
    },
  ]);
  host = await startHostProcess(home.env);
});

afterAll(async () => {
  if (host) await stopProcess(host);
  await home?.cleanup();
});

function expectNoSecrets(text: string): void {
  for (const [name, secret] of Object.entries(SECRETS)) {
    expect(text, `${name} leaked`).not.toContain(secret);
  }
  expect(text).not.toContain(home.root);
  expect(text).not.toMatch(/token/i);
}

describe("host status privacy", () => {
  it("never shows inputs, outputs, paths, session ids, env or credentials", async () => {
    const started = await runCliProcess(
      [
        "start",
        "examples/hello.workflow.ts",
        "--input-json",
        JSON.stringify({ name: SECRETS.input }),
        "--cwd",
        project,
        "--wait",
      ],
      home.env,
      60_000,
    );
    expect(started.code, started.stderr).toBe(0);
    // The run itself did see the secret: it is the user's own output.
    expect(started.stdout).toContain(`Hello, ${SECRETS.input}!`);

    const text = await runCliProcess(["host", "status"], home.env);
    const json = await runCliProcess(["host", "status", "--json"], home.env);
    expect(text.code).toBe(0);
    expect(json.code).toBe(0);
    expect(text.stdout).toContain("runs: 1 queued");
    expect(JSON.parse(json.stdout).runs.queued).toBe(1);
    for (const output of [text.stdout, text.stderr, json.stdout, json.stderr]) {
      expectNoSecrets(output);
    }
    // The attached host logs to stderr (a detached one to host.log, the same lines).
    expectNoSecrets(host.stderr());
    expect(host.stderr()).toContain("run.queued");

    // Stopped: the status comes from the read-only database, under the same rule.
    await stopProcess(host);
    const stopped = await runCliProcess(["host", "status"], home.env);
    const stoppedJson = await runCliProcess(["host", "status", "--json"], home.env);
    expect(stopped.code).toBe(4);
    expect(stopped.stdout).toContain("host: stopped (last epoch 1)");
    expect(JSON.parse(stoppedJson.stdout)).toMatchObject({ state: "stopped", epoch: 1 });
    for (const output of [stopped.stdout, stopped.stderr, stoppedJson.stdout, stoppedJson.stderr]) {
      expectNoSecrets(output);
    }
  });
});

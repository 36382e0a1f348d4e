/**
 * Where and with what a run executes: in its canonical project directory whatever directory the
 * host was started from, with the environment the starting client defined (an allowlisted base
 * plus `--env`), recorded with the run so a relaunch under another host gets the same one, and
 * never the host's own environment. Recorded values stay out of status, list, events and logs.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/wait.ts";
import { ROOT, runCliProcess, type TempHome, tempHome } from "../support/host.ts";

let home: TempHome;
let project: string;
let elsewhere: string;

const PASSED = "passed-value-4f1c";
const FROM_CLIENT = "client-value-9d2e";
const HOST_SECRET = "host-secret-77aa";
const INPUT_SECRET = "input-from-file-31b";

function cli(args: string[], env: NodeJS.ProcessEnv = home.env, options = {}) {
  return runCliProcess(args, env, 60_000, { cwd: elsewhere, ...options });
}

const REPORT = `printf '%s|%s|%s|%s' "$(pwd)" "\${PASSED:-none}" "\${FROM_CLIENT:-none}" ` +
  `"\${HOST_SECRET:-none}"`;

beforeAll(() => {
  home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "5000", HOST_SECRET });
  project = join(home.root, "project");
  elsewhere = join(home.root, "elsewhere");
  mkdirSync(join(project, "sub"), { recursive: true });
  mkdirSync(elsewhere);
  writeFileSync(
    join(project, "where.workflow.ts"),
    `import { existsSync } from "node:fs";
import { compute, defineWorkflow, shell } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "where",
  startAt: "before",
  nodes: {
    before: shell({ exec: () => ({ command: ${JSON.stringify(REPORT)}, shell: true }),
      parse: (r) => r.stdout }),
    relative: shell({ exec: () => ({ command: "pwd", cwd: "sub" }), parse: (r) => r.stdout.trim() }),
    context: compute({ run: ({ state, input }) => ({ projectPath: state.projectPath, input }) }),
    gate: compute({ run: async ({ input }) => {
      const deadline = Date.now() + 60_000;
      while (input.gate && !existsSync(input.gate) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      return true;
    } }),
    after: shell({ exec: () => ({ command: ${JSON.stringify(REPORT)}, shell: true }),
      parse: (r) => r.stdout }),
    done: compute({ run: () => "done" }),
  },
  edges: [
    { from: "before", to: "relative" },
    { from: "relative", to: "context" },
    { from: "context", to: "gate" },
    { from: "gate", to: "after" },
    { from: "after", to: "done" },
  ],
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

describe("run project and environment", () => {
  it("runs in the project with the client's environment, kept across a host restart", async () => {
    const canonical = realpathSync(project);
    const gate = join(home.root, "gate");
    const inputFile = join(home.root, "input.json");
    writeFileSync(inputFile, JSON.stringify({ secret: INPUT_SECRET, gate }));
    // The host starts from another directory, with a secret of its own in its environment.
    expect((await cli(["host", "start"])).code).toBe(0);

    const started = await cli(
      [
        "start",
        "where.workflow.ts",
        "--cwd",
        project,
        "--input-file",
        inputFile,
        "--env",
        `PASSED=${PASSED}`,
        "--env",
        "FROM_CLIENT",
        "--json",
      ],
      { ...home.env, FROM_CLIENT, HOST_SECRET: undefined },
    );
    expect(started.code, started.stderr).toBe(0);
    const runId = (JSON.parse(started.stdout) as { run: { runId: string } }).run.runId;

    // Stop the host while the run waits at `gate`, then start another one from a terminal
    // without those variables: the relaunched worker must get the recorded environment.
    await waitFor(
      () =>
        queryState(
          "SELECT state AS v FROM node_attempts WHERE run_id = ? AND node_id = 'gate'",
          runId,
        ).includes("running"),
      "the run to reach its gate node",
      30_000,
      50,
    );
    expect((await cli(["host", "stop"])).code).toBe(0);
    const otherEnv = { ...home.env, HOST_SECRET: "other-host-secret" };
    expect((await cli(["host", "start"], otherEnv)).code).toBe(0);
    writeFileSync(gate, "open");

    await waitFor(
      () => queryState("SELECT state AS v FROM runs WHERE run_id = ?", runId)[0] === "completed",
      "the run to complete after the host restart",
      60_000,
      50,
    );
    // The gate ran twice: interrupted by the stop, then again under the second host.
    expect(
      queryState(
        "SELECT state AS v FROM node_attempts WHERE run_id = ? AND node_id = 'gate'",
        runId,
      ),
    )
      .toEqual(["interrupted", "ok"]);

    const outputs = readOutputs(runId);
    const expected = `${canonical}|${PASSED}|${FROM_CLIENT}|none`;
    expect(outputs.before).toBe(expected);
    expect(outputs.after).toBe(expected);
    expect(outputs.relative).toBe(join(canonical, "sub"));
    expect(outputs.context).toEqual({
      projectPath: canonical,
      input: { secret: INPUT_SECRET, gate },
    });

    // The recorded values are private: not in status, list, the host log, events or viewer
    // deltas; and they are gone from the database once the run ended.
    const shown = [
      (await cli(["status", runId, "--json"])).stdout,
      (await cli(["status", runId])).stdout,
      (await cli(["list", "--all", "--json"])).stdout,
      readFileSync(join(home.stateDir, "host.log"), "utf8"),
      ...queryState("SELECT payload_json AS v FROM events"),
      ...queryState("SELECT summary_json AS v FROM viewer_deltas"),
    ];
    for (const text of shown) {
      expect(text).not.toContain(PASSED);
      expect(text).not.toContain(FROM_CLIENT);
      expect(text).not.toContain(HOST_SECRET);
    }
    expect(queryState("SELECT env_json AS v FROM run_environments")).toEqual([]);
    // The host's and workers' own output holds none of them. The steps' output files
    // (`step-*`, what `pi-workflows logs` shows) hold what the commands printed, as the nodes'
    // results do: these commands print PASSED on purpose.
    const workerFiles = existsSync(join(home.stateDir, "workers"))
      ? readdirSync(join(home.stateDir, "workers"))
      : [];
    for (const name of workerFiles.filter((n) => !n.startsWith("step-"))) {
      expect(readFileSync(join(home.stateDir, "workers", name), "utf8")).not.toContain(PASSED);
    }
    const stepText = workerFiles.filter((n) => n.startsWith("step-"))
      .map((n) => readFileSync(join(home.stateDir, "workers", n), "utf8")).join("\n");
    expect(stepText).toContain(expected);
    expect(stepText).not.toContain(HOST_SECRET);
  });

  it("reads the input from stdin with --input-json -", async () => {
    const result = await cli(
      ["start", "examples/hello.workflow.ts", "--input-json", "-", "--cwd", ROOT, "--wait"],
      home.env,
      { stdin: '{"name":"Stdin"}' },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("Hello, Stdin!");

    const bad = await cli(["start", "where.workflow.ts", "--cwd", project, "--env", "UNSET_X"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe("Cannot pass --env UNSET_X: it is not set in this environment");
    const missing = await cli(["start", "where.workflow.ts", "--input-file", "nope.json"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("Cannot read --input-file (ENOENT)");
  });
});

/** Rows of one query on the state file, opened read-only. */
function queryState<T = string>(sql: string, ...args: string[]): T[] {
  const db = new DatabaseSync(join(home.stateDir, "state.sqlite"), {
    readOnly: true,
    timeout: 10_000,
  });
  try {
    return (db.prepare(sql).all(...args) as { v: T }[]).map((row) => row.v);
  } finally {
    db.close();
  }
}

/** Each node's output (status shows attempts without outputs). */
function readOutputs(runId: string): Record<string, unknown> {
  const rows = queryState<string>(
    "SELECT json_object('n', node_id, 'o', json(output_json)) AS v FROM node_attempts " +
      "WHERE run_id = ? AND state = 'ok' ORDER BY sequence",
    runId,
  ).map((text) => JSON.parse(text) as { n: string; o: unknown });
  return Object.fromEntries(rows.map((row) => [row.n, row.o]));
}

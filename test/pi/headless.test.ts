/**
 * Headless runs end to end with the real Pi (devDependency) and the fake model on 127.0.0.1:
 * `pi-workflows start ... --wait` from source runs agent steps in supervised `pi --mode rpc`
 * children through the bridge's `workflow` tool. A rejected submission is corrected, an update
 * shows in `status`, a model that never submits gets two reminders and fails clearly, the
 * recorded Pi arguments are the ones every attempt uses, and provider keys planted in the
 * environment and in models.json (the one the fake model is reached with) appear in no status
 * output, log or database row.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../src/os/stop-group.ts";
import { closeStateStore } from "../../src/state/store.ts";
import { queryOne } from "../../src/state/statements.ts";
import { ROOT } from "../support/host.ts";
import { fakeModels } from "../support/pi-sandbox.ts";
import { submitCall } from "../support/step-responder.ts";
import { createHeadlessEnv, type HeadlessEnv, oneAgentStep } from "../support/headless-env.ts";

const TWO_TURN = join(ROOT, "examples/two-turn-agent.workflow.ts");
const SECRET_ENV = "sk-planted-env-4f1c9e";
const SECRET_LITERAL = "sk-planted-literal-7b2d0a";

/**
 * models.json whose default provider has a literal key. Another key is planted in the
 * environment of the CLI that starts the runs (and so of the host it starts), where a user's
 * provider keys often are.
 */
function plantedModels(baseUrl: string) {
  return fakeModels(baseUrl, { apiKey: SECRET_LITERAL });
}

describe("headless runs with the real Pi", () => {
  let h: HeadlessEnv;
  const runIds: string[] = [];

  beforeAll(async () => {
    // A compile cache of its own: the privacy test reads every file under the state directory.
    h = await createHeadlessEnv({
      env: { ANTHROPIC_API_KEY: SECRET_ENV, OPENAI_API_KEY: SECRET_ENV },
      modelsJson: plantedModels,
      ownCompileCache: true,
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it(
    "runs two-turn-agent from the CLI: a rejected output is corrected, an update shows in status",
    async () => {
      h.decide = (request, contract) => {
        if (!contract) return undefined;
        const tool = request.lastToolResult;
        if (contract.step === "draft") {
          if (tool === undefined) return submitCall(contract, { steps: "write a README" });
          if (tool.includes("Output rejected")) {
            return submitCall(contract, { steps: ["write the README", "review it"] });
          }
        }
        if (contract.step === "review") {
          if (tool === undefined) {
            return {
              kind: "tool",
              name: "workflow",
              args: {
                action: "update",
                step: contract.step,
                attempt: contract.attempt,
                update: { type: "status", key: "note", data: { message: "reading the plan" } },
              },
            };
          }
          if (tool.startsWith("Update recorded")) {
            return submitCall(contract, { risk: "typos", ok: true });
          }
        }
        return undefined;
      };
      const from = h.model.requests.length;
      const run = await h.cli([
        "start",
        TWO_TURN,
        "add",
        "a",
        "README",
        "--wait",
        "--cwd",
        h.sandbox.project,
        "--thinking",
        "off",
        "--",
        "--no-prompt-templates",
      ]);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout).toContain("· review status note");
      // The rejected first draft shows as it happens and on the step's closing line.
      expect(run.stdout).toMatch(/· draft 1 of 1 submission rejected: Output rejected: send/);
      expect(run.stdout).toMatch(/✓ draft .*· 1 of 2 submissions rejected\n {4}last rejection: /);
      // Text output names the run by its short id; status takes it and says the full one.
      const shortId = /^✓ completed {2}(run-[0-9a-f]{8}) /m.exec(run.stdout)![1];
      const runId = (await h.cliHereJson(["status", shortId])).run.runId as string;
      runIds.push(runId);
      const output = JSON.parse(run.stdout.trim().split("\n").at(-1)!);
      expect(output).toEqual({
        plan: { steps: ["write the README", "review it"] },
        review: { ok: true, risk: "typos" },
      });

      // The model saw the workflow tool and the node's validate message as the tool's error.
      const requests = h.model.requests.slice(from);
      expect(requests[0].toolNames).toContain("workflow");
      const rejection = requests.find((r) => r.lastToolResult?.includes("Output rejected"));
      expect(rejection?.lastToolResult).toContain('send {"steps": ["step one", "step two"]}');
      expect(rejection?.lastToolResult).toContain("submit again with step");

      const status = await h.cliHere(["status", runId]);
      expect(status.stdout).toContain("mode: headless");
      expect(status.stdout).toMatch(
        /✓ draft .*\n {6}1 of 2 submissions rejected, the last: Output rejected: send \{"steps"/,
      );
      expect(status.stdout).toMatch(
        /updates \(latest first\):\n {2}review status note: .*reading the plan/,
      );
      const json = await h.cliHereJson(["status", runId]);
      expect(json.attempts.find((a: any) => a.nodeId === "draft").submissions).toEqual({
        submitted: 2,
        rejected: 1,
        lastRejection: expect.stringContaining("Output rejected: send"),
      });
      expect(json.updates).toEqual([
        expect.objectContaining({ nodeId: "review", type: "status", key: "note", count: 1 }),
      ]);
      const list = await h.cliHereJson(["list", "--all"]);
      expect(list.runs.find((r: any) => r.runId === runId)?.executionMode).toBe("headless");

      // Recorded with the run: the Pi that was found and the model arguments.
      const store = h.openState();
      try {
        const binding = queryOne<{ pi_command: string; pi_args_json: string }>(
          store,
          "SELECT pi_command, pi_args_json FROM run_bindings WHERE run_id = :runId",
          { runId },
        )!;
        expect(binding.pi_command).toBe(h.env.PI_WORKFLOWS_PI);
        expect(JSON.parse(binding.pi_args_json)).toEqual([
          "--thinking",
          "off",
          "--no-prompt-templates",
        ]);
      } finally {
        closeStateStore(store);
      }
      // Every Pi child is down once the run is done.
      expect(await waitUntil(() => h.piProcesses().length === 0, 10_000)).toBe(true);
    },
    120_000,
  );

  it("refuses a stale attempt, reminds twice, then fails the attempt clearly", async () => {
    const path = h.writeWorkflow("silent.workflow.ts", oneAgentStep("silent"));
    h.decide = (request, contract) => {
      if (!contract) return undefined;
      if (request.lastToolResult === undefined && !request.lastUserText.startsWith("Reminder")) {
        return submitCall({ ...contract, attempt: "an-old-attempt" }, { done: true });
      }
      return { kind: "text", text: "I would rather not." };
    };
    const from = h.model.requests.length;
    const run = await h.cli(["start", path, "--wait", "--json", "--cwd", h.sandbox.project]);
    expect(run.code).toBe(6);
    const result = JSON.parse(run.stdout).run;
    runIds.push(result.runId);
    expect(result.state).toBe("failed");
    expect(result.error.code).toBe("noSubmission");
    expect(result.error.message).toContain('Step "work" failed: the agent ended its turn 3 times');
    const requests = h.model.requests.slice(from);
    const stale = requests.find((r) => r.lastToolResult !== undefined);
    expect(stale?.lastToolResult).toContain('attempt "an-old-attempt" of step "work" is not the');
    const reminders = requests.map((r) => /^Reminder (\d) of 2/.exec(r.lastUserText)?.[1])
      .filter(Boolean);
    expect([...new Set(reminders)]).toEqual(["1", "2"]);
    expect(await waitUntil(() => h.piProcesses().length === 0, 10_000)).toBe(true);
  });

  it("fails submissionsRejected with the last rejection when every submission was rejected", async () => {
    const path = h.writeWorkflow(
      "picky.workflow.ts",
      oneAgentStep(
        "picky",
        ', validate: (o) => { if (o.done !== true) throw new Error("say done: true"); return o; }',
      ),
    );
    // Every turn submits a wrong output once, then ends the turn on the rejection.
    h.decide = (request, contract) => {
      if (!contract) return undefined;
      if (request.lastToolResult?.includes("Output rejected")) return { kind: "text", text: "No." };
      return submitCall(contract, { done: false });
    };
    const run = await h.cli(["start", path, "--wait", "--json", "--cwd", h.sandbox.project]);
    expect(run.code).toBe(6);
    const answer = JSON.parse(run.stdout);
    runIds.push(answer.run.runId);
    expect(answer.run.error).toEqual({
      code: "submissionsRejected",
      message: 'Step "work" failed: the agent ended its turn 3 times without an accepted output ' +
        "(3 submissions, all rejected); the last rejection: Output rejected: say done: true",
    });
    expect(answer.rejectedSubmissions).toEqual([
      expect.objectContaining({ nodeId: "work", state: "failed", submitted: 3, rejected: 3 }),
    ]);
  });

  it("fails the attempt with Pi's own one-line reason when Pi refuses to start or to take the prompt", async () => {
    const path = h.writeWorkflow("refused.workflow.ts", oneAgentStep("refused"));
    const start = (args: string[]) =>
      h.cli(["start", path, "--wait", "--json", "--cwd", h.sandbox.project, ...args]);
    // Pi's messages go on with advice and the paths of its own docs: only the problem is kept.
    const unknown = await start(["--provider", "nosuch", "--model", "x"]);
    const noKey = await start(["--provider", "groq", "--model", "llama-3.3-70b-versatile"]);
    const errors = [unknown, noKey].map((run) => {
      expect(run.code, run.stderr).toBe(6);
      const result = JSON.parse(run.stdout).run;
      runIds.push(result.runId);
      return result.error;
    });
    expect(errors[0]).toEqual({
      code: "piExited",
      message: expect.stringMatching(
        /^Pi exited \(exit code 1\) before step "work" was submitted: Error: Unknown provider "nosuch"/,
      ),
    });
    expect(errors[1]).toEqual({
      code: "piPromptRefused",
      message: 'Pi refused the prompt of step "work": No API key found for groq.',
    });
    for (const error of errors) expect(error.message).not.toMatch(/\n|docs\//);
  });

  it("runs a decision step headless: a choice outside the list is rejected, the next routes", async () => {
    const path = h.writeWorkflow(
      "route.workflow.ts",
      `import { compute, decision, decisionEdge, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "route",
  startAt: "pick",
  nodes: {
    pick: decision({ question: "Which way?", choices: ["left", "right"] }),
    left: compute({ run: () => "went left" }),
    right: compute({ run: () => "went right" }),
  },
  edges: [decisionEdge({ from: "pick", choices: ["left", "right"], cases: { left: "left", right: "right" } })],
});
`,
    );
    h.decide = (request, contract) => {
      if (!contract) return undefined;
      if (request.lastToolResult === undefined) return submitCall(contract, { route: "up" });
      if (request.lastToolResult.includes("Output rejected")) {
        return submitCall(contract, { route: "right" });
      }
      return undefined;
    };
    const from = h.model.requests.length;
    const run = await h.cli(["start", path, "--wait", "--json", "--cwd", h.sandbox.project]);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout).run;
    runIds.push(result.runId);
    expect(result.output).toBe("went right");
    const requests = h.model.requests.slice(from);
    expect(requests[0].lastUserText).toContain("Choose exactly one of: left, right.");
    expect(requests.find((r) => r.lastToolResult?.includes("Output rejected"))?.lastToolResult)
      .toContain('"route" must be one of "left", "right"');
  });

  it("keeps planted provider keys out of every status output, log and database row", async () => {
    expect(runIds.length).toBeGreaterThan(0);
    const outputs = [
      (await h.cli(["host", "status", "--json"])).stdout,
      (await h.cli(["list", "--all", "--json"])).stdout,
      (await h.cli(["list", "--all"])).stdout,
    ];
    // Each command once as a process (the CLI's own environment holds the keys), the other runs'
    // status through the CLI's entry here (what the host holds of each run; a Node start each
    // was most of this case's time).
    for (const [i, runId] of runIds.entries()) {
      const cli = i === 0 ? h.cli : h.cliHere;
      outputs.push((await cli(["status", runId, "--json"])).stdout);
      outputs.push((await cli(["status", runId])).stdout);
    }
    for (const text of outputs) {
      expect(text).not.toContain(SECRET_ENV);
      expect(text).not.toContain(SECRET_LITERAL);
    }
    // Every file in the state directory: the database and its WAL, the host log, worker and Pi
    // output tails, the bridge.
    const files = listFiles(h.sandbox.stateDir);
    expect(files.some((f) => f.endsWith("state.sqlite"))).toBe(true);
    expect(files.some((f) => /-pi\d+\.out$/.test(f))).toBe(true);
    for (const file of files) {
      const bytes = readFileSync(file);
      expect(bytes.includes(SECRET_ENV), file).toBe(false);
      expect(bytes.includes(SECRET_LITERAL), file).toBe(false);
    }
  }, 120_000);
});

function listFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return listFiles(path);
    return statSync(path).isFile() ? [path] : [];
  });
}

describe("a provider that fails during a headless step", () => {
  // Its own sandbox: the provider's error quotes the key, so Pi's own output (kept in the state
  // directory) holds it, which the privacy check above forbids for its planted keys.
  const QUOTED_KEY = "sk-quoted-by-provider-5e8a1c";
  let p: HeadlessEnv;

  beforeAll(async () => {
    p = await createHeadlessEnv({ env: { OPENAI_API_KEY: QUOTED_KEY } });
  });
  afterAll(async () => {
    await p?.close();
  });

  it("fails the attempt with the model's error when the provider fails, not as noSubmission", async () => {
    // Pi retries per its settings (off in the sandbox) and ends the turn on the error: a
    // reminder would only meet it again, and "ended its turn without submitting" blames the
    // agent. The provider's text may quote the key it refused: the run's keys are redacted.
    const from = p.model.requests.length;
    p.decide = () => ({
      kind: "error",
      status: 401,
      message: `Incorrect API key provided: ${QUOTED_KEY}`,
    });
    const path = p.writeWorkflow("outage.workflow.ts", oneAgentStep("outage"));
    const run = await p.cli(["start", path, "--wait", "--json", "--cwd", p.sandbox.project]);
    expect(run.code, run.stderr).toBe(6);
    const result = JSON.parse(run.stdout).run;
    expect(result.error).toEqual({
      code: "modelFailed",
      message:
        'The model failed during step "work": 401: {"message":"Incorrect API key provided: [redacted]"}',
    });
    // One request: no reminder turns after the failure.
    expect(p.model.requests.length - from).toBe(1);
    const status = await p.cli(["status", result.runId]);
    expect(status.stdout).toContain("modelFailed");
    expect(status.stdout).not.toContain(QUOTED_KEY);
  });
});

/**
 * What headless runs spend, with the real Pi and the fake model: every model reply reports usage
 * (the streamed usage chunk, with cached and cache-write tokens), which Pi prices with the
 * model's rates from models.json. The attempts record exactly those sums, `status`, `list` and
 * `start --wait` show them, a run over its budget is blocked before its next model step (also
 * when its worker is SIGKILLed between the step's committed outcome and that check), raised with
 * `budget`, and completes (also across a host SIGKILL and a pause while it waits), and a worker
 * SIGKILLed between a model call and the submission, or between the submitting call and the
 * outcome's commit, keeps what that call used, counted once (an agent group's members too, each
 * read back from its own session).
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readProcessIdentityNow } from "../../src/os/process-identity.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import { closeStateStore } from "../../src/state/store.ts";
import { queryAll } from "../../src/state/statements.ts";
import type { FakeUsage } from "../support/fake-model.ts";
import { FAKE_MODEL_ID, fakeModels } from "../support/pi-sandbox.ts";
import { submitCall } from "../support/step-responder.ts";
import { waitFor } from "../smoke/processes.ts";
import { createHeadlessEnv, type HeadlessEnv } from "../support/headless-env.ts";

/** US dollars per million tokens, as in models.json. */
const RATES = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };

function pricedModels(baseUrl: string) {
  const models = fakeModels(baseUrl);
  const provider = models.providers.fake as { models: Record<string, unknown>[] };
  provider.models = [
    { ...provider.models[0], cost: RATES },
    { ...provider.models[0], id: "free-model" },
  ];
  return models;
}

/** What Pi makes of one usage chunk (openai-completions `parseChunkUsage` + `calculateCost`). */
function expected(usage: FakeUsage) {
  const cacheRead = usage.cached ?? 0;
  const cacheWrite = usage.cacheWrite ?? 0;
  const input = usage.prompt - cacheRead - cacheWrite;
  const cost = (RATES.input * input + RATES.output * usage.completion +
    RATES.cacheRead * cacheRead + RATES.cacheWrite * cacheWrite) / 1e6;
  return { input, output: usage.completion, cacheRead, cacheWrite, cost };
}

function sum(...parts: ReturnType<typeof expected>[]) {
  return parts.reduce((a, b) => ({
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    cost: a.cost + b.cost,
  }));
}

const tokens = (u: ReturnType<typeof expected>) => u.input + u.output + u.cacheRead + u.cacheWrite;

const UPDATE_USAGE: FakeUsage = { prompt: 1000, completion: 200, cached: 400 };
const PLAN_SUBMIT: FakeUsage = { prompt: 1500, completion: 100, cached: 1000, cacheWrite: 100 };
const WRITE_SUBMIT: FakeUsage = { prompt: 2000, completion: 300 };

function twoSteps(name: string, budget = ""): string {
  return `import { agent, compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: ${JSON.stringify(name)},${budget}
  startAt: "plan",
  nodes: {
    plan: agent({ prompt: "Plan it (${name})." }),
    write: agent({ prompt: "Write it (${name})." }),
    finish: compute({ run: ({ outputs }) => ({ plan: outputs.plan, write: outputs.write }) }),
  },
  edges: [{ from: "plan", to: "write" }, { from: "write", to: "finish" }],
});
`;
}

describe("usage and budgets of headless runs", () => {
  let h: HeadlessEnv;
  // A worker SIGKILLs itself once its node.finished is committed, while this file is absent: the
  // budget case removes it (the crash marks it again).
  const crashDir = mkdtempSync(join(tmpdir(), "piw-usage-crash-"));
  const crashOnce = join(crashDir, "crashed");
  writeFileSync(crashOnce, "");

  beforeAll(async () => {
    h = await createHeadlessEnv({
      modelsJson: pricedModels,
      env: {
        PI_WORKFLOWS_CRASH_AT: "worker.node.finished.afterReply",
        PI_WORKFLOWS_CRASH_ONCE: crashOnce,
        PI_WORKFLOWS_CLAIM_TTL_MS: "3000",
        PI_WORKFLOWS_CLAIM_RENEW_MS: "1000",
      },
    });
    // plan: an update (a model call that does not submit), then the submission; write: submits.
    h.decide = (request, contract) => {
      if (!contract) return undefined;
      if (request.lastToolResult !== undefined && !request.lastToolResult.startsWith("Update")) {
        return undefined;
      }
      if (contract.step === "plan") {
        if (request.lastToolResult === undefined) {
          return {
            kind: "tool",
            name: "workflow",
            args: {
              action: "update",
              step: "plan",
              attempt: contract.attempt,
              update: { type: "status", data: "thinking" },
            },
            usage: UPDATE_USAGE,
          };
        }
        return { ...submitCall(contract, { steps: 2 }), usage: PLAN_SUBMIT };
      }
      return { ...submitCall(contract, { text: "done" }), usage: WRITE_SUBMIT };
    };
  });
  afterAll(async () => {
    await h?.close();
    rmSync(crashDir, { recursive: true, force: true });
  });

  it("records each attempt's usage exactly and shows it in status, list and --wait", async () => {
    const path = h.writeWorkflow("spend.workflow.ts", twoSteps("spend"));
    const run = await h.cli(["start", path, "--wait", "--cwd", h.sandbox.project]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const plan = sum(expected(UPDATE_USAGE), expected(PLAN_SUBMIT));
    const write = expected(WRITE_SUBMIT);
    const total = sum(plan, write);
    // The --wait lines: each model step's usage, and the run's spend in the summary.
    expect(run.stdout).toMatch(/✓ plan .*· 2\.8k tokens, \$0\.008295\n/);
    expect(run.stdout).toMatch(/✓ write .*· 2\.3k tokens, \$0\.0105/);
    expect(run.stdout).toMatch(/✓ completed .*· 5\.1k tokens, \$0\.0188/);

    const runId = /(run-[0-9a-f]{8})/.exec(run.stdout)![1];
    const status = await h.cliHereJson(["status", runId]);
    const byNode = Object.fromEntries(
      status.attempts.map((a: { nodeId: string }) => [a.nodeId, a]),
    );
    for (const [node, want] of [["plan", plan], ["write", write]] as const) {
      const usage = byNode[node].usage;
      expect(usage).toMatchObject({
        input: want.input,
        output: want.output,
        cacheRead: want.cacheRead,
        cacheWrite: want.cacheWrite,
        provider: "fake",
        model: FAKE_MODEL_ID,
      });
      expect(usage.cost).toBeCloseTo(want.cost, 12);
    }
    expect(byNode.finish.usage).toBeUndefined();
    expect(status.run.spend.tokens).toBe(tokens(total));
    expect(status.run.spend.cost).toBeCloseTo(total.cost, 12);

    const text = (await h.cliHere(["status", runId])).stdout;
    expect(text).toMatch(/spend: 5\.1k tokens, \$0\.0188/);
    expect(text).toMatch(
      /plan +agent, ok, .*2\.8k tokens, \$0\.008295 \(in 1000, out 300, cache read 1400, write 100\), fake\/fake-model/,
    );
    const list = (await h.cliHere(["list", "--all"])).stdout;
    expect(list).toMatch(new RegExp(`${runId.slice(0, 12)} .* \\$0\\.0188 +spend`));

    // Recording usage added no event of its own for steps that submit in their call, and
    // one for the model call that did not (plan's update).
    const db = h.openState();
    try {
      const usageEvents = queryAll<{ n: number }>(
        db,
        "SELECT COUNT(*) AS n FROM events WHERE run_id = :runId AND type = 'node.usage'",
        { runId: status.run.runId },
      );
      expect(usageEvents[0].n).toBe(1);
    } finally {
      closeStateStore(db);
    }
  }, 120_000);

  it("a model with no price shows tokens only, never a made-up cost", async () => {
    const path = h.writeWorkflow("free.workflow.ts", twoSteps("free"));
    const run = await h.cliJson([
      "start",
      path,
      "--wait",
      "--cwd",
      h.sandbox.project,
      "--provider",
      "fake",
      "--model",
      "free-model",
    ]);
    expect(run.run.state).toBe("completed");
    const status = await h.cliHereJson(["status", run.run.runId]);
    expect(status.run.spend).toEqual({ tokens: 5100, cost: null });
    expect(status.attempts.find((a: { nodeId: string }) => a.nodeId === "write").usage)
      .toMatchObject({ cost: null, model: "free-model" });
    const text = (await h.cliHere(["status", run.run.runId])).stdout;
    expect(text).toContain("spend: 5.1k tokens\n");
    expect(text).not.toMatch(/spend: .*\$/);
  }, 120_000);

  it(
    "a run over its budget waits before its next model step, is raised, and completes",
    async () => {
      // plan costs $0.0083: at or over the $0.005 budget, write does not start. The worker dies
      // right after plan's outcome commits; the next one reads the spend from SQLite.
      rmSync(crashOnce);
      const path = h.writeWorkflow(
        "budget.workflow.ts",
        twoSteps("budget", "\n  budget: { maxCostUsd: 0.005 },"),
      );
      const started = await h.cli([
        "start",
        path,
        "--wait",
        "--cwd",
        h.sandbox.project,
        "--max-cost",
        "0.01",
      ]);
      // The workflow's smaller limit wins; the run needs a person.
      expect(existsSync(crashOnce)).toBe(true); // the crash happened
      expect(started.code).toBe(7);
      expect(started.stdout).toMatch(/over budget/);
      expect(started.stdout).toMatch(/next: pi-workflows budget run-[0-9a-f]{8} --raise <USD>/);
      const runId = /(run-[0-9a-f]{8})/.exec(started.stdout)![1];
      const blocked = await h.cliHereJson(["status", runId]);
      expect(blocked.run.blockedReason).toBe("budgetExceeded");
      expect(blocked.run.budget).toEqual({ maxCostUsd: 0.005 });
      expect(blocked.attempts.map((a: { nodeId: string }) => a.nodeId)).toEqual(["plan"]);
      expect(blocked.attempts[0].state).toBe("ok");
      const text = (await h.cliHere(["status", runId])).stdout;
      expect(text).toContain("spend: 2.8k tokens, $0.008295 of budget $0.005");

      // The host SIGKILLed while the run waits: the next host finds it parked as it was.
      const host = h.processes().find((p) => p.argv.at(-2) === "host" && p.argv.at(-1) === "run");
      process.kill(host!.pid, "SIGKILL");
      expect(await waitUntil(() => readProcessIdentityNow(host!.pid) === null, 10_000)).toBe(true);
      expect((await h.cli(["host", "start"], 60_000)).code).toBe(0);
      const after = await h.cliHereJson(["status", runId]);
      expect(after.run).toMatchObject({
        state: "running",
        blockedReason: "budgetExceeded",
        budget: { maxCostUsd: 0.005 },
        spend: blocked.run.spend,
      });
      expect(after.attempts.length).toBe(1);

      // Paused while it waits: resume is refused until the budget is raised (a raise below the
      // spend keeps it blocked); a raise above frees it but a paused run stays paused until
      // resumed.
      expect((await h.cliHere(["pause", runId])).code).toBe(0);
      const resume = await h.cliHere(["resume", runId]);
      expect(resume.code).toBe(3);
      expect(resume.stderr).toContain(`pi-workflows budget ${blocked.run.runId} --raise`);
      const small = await h.cliHereJson(["budget", runId, "--raise", "0.001"]);
      expect(small.run.blockedReason).toBe("budgetExceeded");
      expect(small.run.budget.maxCostUsd).toBeCloseTo(0.006, 12);
      const raised = await h.cliHere(["budget", runId, "--raise", "$0.004"]);
      expect(raised.code).toBe(0);
      expect(raised.stdout).toMatch(/spend: 2\.8k tokens, \$0\.008295 of budget \$0\.0100/);
      const paused = await h.cliHereJson(["status", runId]);
      expect(paused.run.paused).toBe(true);
      expect(paused.run.blockedReason ?? null).toBeNull();
      expect(paused.attempts.length).toBe(1);
      expect((await h.cliHere(["resume", runId])).code).toBe(0);
      const done = await h.cli(["status", runId, "--wait"]);
      expect(done.code).toBe(0);
      // write started under the budget and crossed it: it finished, its work is paid for.
      const status = await h.cliHereJson(["status", runId]);
      expect(status.run.state).toBe("completed");
      expect(status.run.spend.cost).toBeCloseTo(0.018795, 12);
    },
    240_000,
  );

  it("refuses bad budget input with a clear message", async () => {
    const noAmount = await h.cliHere(["budget", "run-x"]);
    expect(noAmount.code).toBe(2);
    expect(noAmount.stderr).toContain("needs --raise USD or --raise-tokens N");
    const bad = await h.cliHere(["start", "x.workflow.ts", "--max-cost", "lots"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("Invalid --max-cost 'lots'");
    const badTokens = await h.cliHere(["start", "x.workflow.ts", "--max-tokens", "-5"]);
    expect(badTokens.code).toBe(2);
  });

  it(
    "a worker SIGKILLed between a model call and the submission keeps that call's usage, once",
    async () => {
      const gateOpen = { open: false };
      let calls = 0;
      h.decide = (request, contract) => {
        if (!contract) return undefined;
        if (request.lastToolResult !== undefined) return undefined;
        calls++;
        // First attempt: a call that runs a long command (its usage is made durable at once).
        if (calls === 1) {
          return {
            kind: "tool",
            name: "bash",
            args: { command: "sleep 301; echo" },
            usage: UPDATE_USAGE,
          };
        }
        gateOpen.open = true;
        return { ...submitCall(contract, { ok: true }), usage: WRITE_SUBMIT };
      };
      const path = h.writeWorkflow(
        "crash.workflow.ts",
        `import { agent, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({ name: "crash", startAt: "work",
  nodes: { work: agent({ prompt: "Do the crash work." }) } });
`,
      );
      const started = await h.cliJson(["start", path, "--cwd", h.sandbox.project]);
      const runId = started.run.runId as string;
      const sleep = await waitFor(
        "Pi to run the sleep",
        60_000,
        () => h.processes().find((p) => p.argv.join(" ").includes("sleep 301")),
      );
      // Its usage is durable before the command runs (a model call that does not submit).
      const db = h.openState();
      try {
        const durable = await waitUntil(() => {
          const rows = queryAll<{ n: number }>(
            db,
            "SELECT COUNT(*) AS n FROM node_attempts WHERE run_id = :runId AND usage_tokens > 0",
            { runId },
          );
          return rows[0].n === 1;
        }, 30_000);
        expect(durable).toBe(true);
      } finally {
        closeStateStore(db);
      }
      const pi = h.piProcesses().find((p) => p.pid === sleep.ppid) ?? h.piProcesses()[0];
      process.kill(pi.ppid, "SIGKILL"); // the worker
      await waitFor("the run to complete", 90_000, async () => {
        const run = (await h.cliHereJson(["status", runId])).run;
        return run.state === "completed" ? run : undefined;
      }, 500);
      expect(gateOpen.open).toBe(true);
      const status = await h.cliHereJson(["status", runId]);
      const [first, second] = status.attempts;
      expect(first.state).toBe("interrupted");
      expect(first.usage).toMatchObject({ input: 600, output: 200, cacheRead: 400 });
      expect(second.state).toBe("ok");
      expect(second.usage).toMatchObject({ input: 2000, output: 300, cacheRead: 0 });
      const total = sum(expected(UPDATE_USAGE), expected(WRITE_SUBMIT));
      expect(status.run.spend.tokens).toBe(tokens(total));
      expect(status.run.spend.cost).toBeCloseTo(total.cost, 12);
    },
    240_000,
  );

  it(
    "a worker SIGKILLed after its submitting call's usage was read, before the outcome, loses none",
    async () => {
      // Every worker of a host restarted now dies once right before it sends node.finished: the
      // submitting call's usage has been read (the step waited for it) but is not in SQLite.
      h.env.PI_WORKFLOWS_CRASH_AT = "worker.node.finished.beforeSend";
      expect((await h.cli(["host", "stop"], 20_000)).code).toBe(0);
      rmSync(crashOnce);
      let attempts = 0;
      h.decide = (request, contract) => {
        if (!contract || request.lastToolResult !== undefined) return undefined;
        // The first attempt submits in its first call; the attempt run after the crash too.
        return {
          ...submitCall(contract, { ok: true }),
          usage: ++attempts === 1 ? PLAN_SUBMIT : WRITE_SUBMIT,
        };
      };
      const path = h.writeWorkflow(
        "lost.workflow.ts",
        `import { agent, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({ name: "lost", startAt: "work",
  nodes: { work: agent({ prompt: "Do the lost work." }) } });
`,
      );
      const run = await h.cliJson(["start", path, "--wait", "--cwd", h.sandbox.project]);
      expect(existsSync(crashOnce)).toBe(true); // the crash happened
      expect(run.run.state).toBe("completed");
      const status = await h.cliHereJson(["status", run.run.runId]);
      const [first, second] = status.attempts;
      expect(first.state).toBe("interrupted");
      // Its accepted submission was counted on the outcome the crash took: read back too.
      expect(first.submissions).toMatchObject({ submitted: 1, rejected: 0 });
      const lost = expected(PLAN_SUBMIT);
      expect(first.usage).toMatchObject({
        input: lost.input,
        output: lost.output,
        cacheRead: lost.cacheRead,
        cacheWrite: lost.cacheWrite,
      });
      expect(second.state).toBe("ok");
      expect(second.usage).toMatchObject({ input: 2000, output: 300, cacheRead: 0 });
      const total = sum(lost, expected(WRITE_SUBMIT));
      expect(status.run.spend.tokens).toBe(tokens(total));
      expect(status.run.spend.cost).toBeCloseTo(total.cost, 12);
      // The accepted submission's tally rode on the outcome: the step added no commit for it.
      expect(second.submissions).toMatchObject({ submitted: 1, rejected: 0 });
    },
    240_000,
  );

  it(
    "an agent group's worker SIGKILLed before the group's outcome loses no member's usage",
    async () => {
      // As above (the host's workers die once right before node.finished), for a group: each
      // member's submitting call is in the member's own session, not in SQLite.
      if (h.env.PI_WORKFLOWS_CRASH_AT !== "worker.node.finished.beforeSend") {
        h.env.PI_WORKFLOWS_CRASH_AT = "worker.node.finished.beforeSend";
        expect((await h.cli(["host", "stop"], 20_000)).code).toBe(0);
      }
      rmSync(crashOnce, { force: true });
      const first: Record<string, FakeUsage> = { "team.a": PLAN_SUBMIT, "team.b": UPDATE_USAGE };
      const seen = new Set<string>();
      h.decide = (request, contract) => {
        if (!contract || request.lastToolResult !== undefined) return undefined;
        // Each member submits in its first call; after the crash each submits WRITE_SUBMIT.
        const again = seen.has(contract.step);
        seen.add(contract.step);
        return {
          ...submitCall(contract, { ok: true }),
          usage: again ? WRITE_SUBMIT : first[contract.step],
        };
      };
      const path = h.writeWorkflow(
        "group.workflow.ts",
        `import { agentGroup, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({ name: "group", startAt: "team",
  nodes: { team: agentGroup({ agents: () => [
    { id: "a", prompt: "Member a of the group." },
    { id: "b", prompt: "Member b of the group." },
  ] }) } });
`,
      );
      const run = await h.cliJson(["start", path, "--wait", "--cwd", h.sandbox.project]);
      expect(existsSync(crashOnce)).toBe(true); // the crash happened
      expect(run.run.state).toBe("completed");
      const status = await h.cliHereJson(["status", run.run.runId]);
      const [lost, rerun] = status.attempts;
      expect(lost.state).toBe("interrupted");
      const a = expected(PLAN_SUBMIT);
      const b = expected(UPDATE_USAGE);
      const part = (u: ReturnType<typeof expected>) => ({
        input: u.input,
        output: u.output,
        cacheRead: u.cacheRead,
        cacheWrite: u.cacheWrite,
      });
      // Each member's on its own record, and their sum on the group.
      expect(lost.usage).toMatchObject({
        ...part(sum(a, b)),
        members: [{ id: "a", ...part(a) }, { id: "b", ...part(b) }],
      });
      expect(rerun.state).toBe("ok");
      const again = expected(WRITE_SUBMIT);
      expect(rerun.usage).toMatchObject({
        ...part(sum(again, again)),
        members: [{ id: "a", ...part(again) }, { id: "b", ...part(again) }],
      });
      const total = sum(a, b, again, again);
      expect(status.run.spend.tokens).toBe(tokens(total));
      expect(status.run.spend.cost).toBeCloseTo(total.cost, 12);
    },
    240_000,
  );
});

/**
 * A headless run is one Pi conversation, durably, with the real Pi and the fake model: a
 * two-step run whose worker is SIGKILLed during step one and whose host is SIGKILLed between the
 * steps (in a compute node) and again during step two completes; each step's request at the
 * model holds the earlier steps' messages once each, and a step presented again after its attempt
 * was interrupted says so. The session file is 0600 in 0700 directories, `status` names it, it
 * outlives the run, and `pi --session <file>` opens it. Between the two steps one Pi serves the
 * run (in a generation without kills, the same Pi answers both steps). Agent group members fork
 * the run's conversation into sessions of their own, and `logs` shows each member's part of it.
 */
import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readProcessIdentityNow } from "../../src/os/process-identity.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import { type ProcessInfo, waitFor } from "../smoke/processes.ts";
import type { ChatMessage, FakeModelRequest } from "../support/fake-model.ts";
import { startPi, stopAllPi } from "../support/pi-rpc.ts";
import { submitCall } from "../support/step-responder.ts";
import { createHeadlessEnv, type HeadlessEnv } from "../support/headless-env.ts";

/** Two agent steps with a compute node between them that waits for `marker` (bounded). */
function twoSteps(name: string, marker: string): string {
  return `import { existsSync } from "node:fs";
import { agent, compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: ${JSON.stringify(name)},
  startAt: "one",
  nodes: {
    one: agent({ prompt: "Step one of ${name}: read the plan.", expectedOutput: '{"a": 1}' }),
    between: compute({
      run: async () => {
        const until = Date.now() + 120_000;
        while (!existsSync(${JSON.stringify(marker)}) && Date.now() < until) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        return { waited: true };
      },
    }),
    two: agent({ prompt: "Step two of ${name}: build on step one.", expectedOutput: '{"b": 2}' }),
    finish: compute({ run: ({ outputs }) => ({ one: outputs.one, two: outputs.two }) }),
  },
  edges: [
    { from: "one", to: "between" },
    { from: "between", to: "two" },
    { from: "two", to: "finish" },
  ],
});
`;
}

const textOf = (message: ChatMessage): string =>
  typeof message.content === "string" ? message.content : JSON.stringify(message.content ?? "");

/** Every message appears once: no step's prompt, tool call or result was replayed. */
function expectNoDuplicates(request: FakeModelRequest): void {
  const seen = new Map<string, number>();
  for (const message of request.messages) {
    const key = JSON.stringify(message);
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  const repeated = [...seen].filter(([, count]) => count > 1).map(([key]) => key.slice(0, 200));
  expect(repeated).toEqual([]);
}

const countText = (request: FakeModelRequest, needle: string) =>
  request.messages.filter((m) => m.role === "user" && textOf(m).includes(needle)).length;

describe("a headless run is one durable Pi conversation", () => {
  let h: HeadlessEnv;

  beforeAll(async () => {
    h = await createHeadlessEnv({
      env: {
        PI_WORKFLOWS_CLAIM_TTL_MS: "3000",
        PI_WORKFLOWS_CLAIM_RENEW_MS: "1000",
      },
    });
  });
  afterAll(async () => {
    await stopAllPi();
    await h?.close();
  });

  const status = (runId: string) => h.cliHereJson(["status", runId, "--attempts", "all"]);
  const hostProcess = () =>
    h.processes().find((p) => p.argv.at(-2) === "host" && p.argv.at(-1) === "run");
  const gone = (p: ProcessInfo) => readProcessIdentityNow(p.pid) === null;

  it(
    "continues the conversation across a worker kill, a host kill between and during steps",
    async () => {
      const marker = join(h.sandbox.root, "between.go");
      let holdOne = true;
      let holdTwo = true;
      h.decide = (request, contract) => {
        if (!contract || request.lastToolResult !== undefined) return undefined;
        if (contract.step === "one" && holdOne) return { kind: "hang" };
        if (contract.step === "two" && holdTwo) return { kind: "hang" };
        return submitCall(contract, contract.step === "one" ? { a: 1 } : { b: 2 });
      };
      const path = h.writeWorkflow("conversation.workflow.ts", twoSteps("conversation", marker));
      const from = h.model.requests.length;
      const started = await h.cliJson(["start", path, "--cwd", h.sandbox.project]);
      const runId: string = started.run.runId;

      // The session file: chosen by the host, named by status, private.
      const first = await status(runId);
      expect(first.pi.context).toBe("none");
      const sessionFile: string = first.pi.sessionFile;
      expect(sessionFile).toBe(join(h.sandbox.stateDir, "sessions", runId, "run.jsonl"));

      // Step one's first request hangs; the worker is SIGKILLed (the host reaps its Pi).
      const cut = await h.model.waitForRequest((r) => r.lastUserText.includes("Step one"), {
        from,
        timeoutMs: 60_000,
      });
      expect(statSync(sessionFile).mode & 0o777).toBe(0o600);
      expect(statSync(dirname(sessionFile)).mode & 0o777).toBe(0o700);
      expect(statSync(join(h.sandbox.stateDir, "sessions")).mode & 0o777).toBe(0o700);
      const pi = await waitFor("the step's Pi", 30_000, () => h.piProcesses()[0]);
      holdOne = false;
      process.kill(pi.ppid, "SIGKILL");
      expect(await waitUntil(() => gone(pi), 15_000)).toBe(true);

      // The step is presented again in the same conversation, saying why.
      const again = await h.model.waitForRequest(
        (r) => r.index > cut.index && r.lastUserText.includes("was interrupted"),
        { timeoutMs: 90_000 },
      );
      expect(again.lastUserText).toContain("Step one of conversation");
      expect(countText(again, "Step one of conversation")).toBe(2);
      expectNoDuplicates(again);

      // Between the steps (the compute node waits for the marker) the host is SIGKILLed.
      await waitFor("the run to reach the compute node", 60_000, async () => {
        const s = await status(runId);
        return s.attempts.some((a: any) => a.nodeId === "between" && a.state === "running")
          ? true
          : undefined;
      }, 200);
      const host = hostProcess();
      expect(host).toBeDefined();
      process.kill(host!.pid, "SIGKILL");
      expect(await waitUntil(() => gone(host!), 10_000)).toBe(true);
      writeFileSync(marker, "go");
      const beforeTwo = h.model.requests.length;
      expect((await h.cli(["host", "start"], 60_000)).code).toBe(0);

      // Step two's first request: step one's messages, once each; then the host dies again.
      const twoCut = await h.model.waitForRequest((r) => r.lastUserText.includes("Step two"), {
        from: beforeTwo,
        timeoutMs: 90_000,
      });
      expect(countText(twoCut, "Step one of conversation")).toBe(2);
      expect(
        twoCut.messages.filter((m) =>
          m.tool_calls?.some((call) => call.function.arguments.includes('"output":{"a":1}'))
        ).length,
      ).toBe(1);
      expectNoDuplicates(twoCut);
      holdTwo = false;
      const host2 = hostProcess();
      process.kill(host2!.pid, "SIGKILL");
      expect(await waitUntil(() => gone(host2!), 10_000)).toBe(true);
      expect((await h.cli(["host", "start"], 60_000)).code).toBe(0);

      const done = await waitFor("the run to complete", 120_000, async () => {
        const s = await status(runId);
        return s.run.state === "completed" ? s : undefined;
      }, 250);
      expect(done.run.output).toEqual({ one: { a: 1 }, two: { b: 2 } });
      const last = h.model.requests.findLast((r) => r.lastUserText.includes("Step two"))!;
      expect(last.lastUserText).toContain("was interrupted");
      expect(countText(last, "Step one of conversation")).toBe(2);
      expect(countText(last, "Step two of conversation")).toBe(2);
      expectNoDuplicates(last);
      const attempts = (node: string) =>
        done.attempts.filter((a: any) => a.nodeId === node).map((a: any) => a.state);
      expect(attempts("one")).toEqual(["interrupted", "ok"]);
      expect(attempts("two")).toEqual(["interrupted", "ok"]);

      // The ended run keeps its conversation, and Pi opens it.
      expect(existsSync(sessionFile)).toBe(true);
      expect((await status(runId)).pi.sessionFile).toBe(sessionFile);
      const text = await h.cli(["status", runId]);
      expect(text.stdout).toContain(`pi --session ${sessionFile}`);
      const viewer = await startPi(h.sandbox, {
        ephemeral: false,
        args: ["--session", sessionFile],
      });
      const messages = await viewer.command({ type: "get_messages" });
      expect(messages.success).toBe(true);
      const transcript = JSON.stringify(messages.data);
      expect(transcript).toContain("Step one of conversation");
      expect(transcript).toContain("Step two of conversation");
      await viewer.kill();
      expect(h.piProcesses()).toEqual([]);
    },
    300_000,
  );

  it(
    "one Pi serves consecutive steps of a generation; compute nodes between do not stop it",
    async () => {
      const marker = join(h.sandbox.root, "open.go");
      writeFileSync(marker, "go");
      h.decide = () => undefined;
      const pids = new Set<number>();
      const path = h.writeWorkflow("one-pi.workflow.ts", twoSteps("onepi", marker));
      const from = h.model.requests.length;
      // Pis that serve steps (a worker's children), not the CLI's one-off `pi --version` check.
      const watch = setInterval(() => {
        const all = h.processes();
        for (const p of h.piProcesses()) {
          const parent = all.find((q) => q.pid === p.ppid);
          if (!parent?.argv.includes("start")) pids.add(p.pid);
        }
      }, 20);
      try {
        const run = await h.cli(["start", path, "--cwd", h.sandbox.project, "--wait", "--json"]);
        expect(run.code).toBe(0);
      } finally {
        clearInterval(watch);
      }
      const steps = h.model.requests.slice(from).filter((r) =>
        r.lastRole === "user" && r.lastUserText.includes("of onepi")
      );
      expect(steps.map((r) => r.lastUserText.includes("Step two"))).toEqual([false, true]);
      // Both steps' requests came from one Pi: the second carries the first's conversation.
      expect(countText(steps[1], "Step one of onepi")).toBe(1);
      expect(pids.size).toBe(1);
      expect(await waitUntil(() => h.piProcesses().length === 0, 15_000)).toBe(true);
    },
    120_000,
  );

  it("agent group members fork the run's conversation into sessions of their own", async () => {
    h.decide = () => undefined;
    const path = h.writeWorkflow(
      "group.workflow.ts",
      `import { agent, agentGroup, compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "grouped",
  startAt: "look",
  nodes: {
    look: agent({ prompt: "Look first at the grouped project.", expectedOutput: '{"ok": true}' }),
    team: agentGroup({
      agents: () => [
        { id: "a", prompt: "Member a of grouped: review." },
        { id: "b", prompt: "Member b of grouped: review." },
      ],
    }),
    done: compute({ run: ({ outputs }) => outputs.team }),
  },
  edges: [{ from: "look", to: "team" }, { from: "team", to: "done" }],
});
`,
    );
    const from = h.model.requests.length;
    const run = await h.cli(["start", path, "--cwd", h.sandbox.project, "--wait", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    const runId = JSON.parse(run.stdout).run.runId as string;
    const members = h.model.requests.slice(from).filter((r) =>
      r.lastRole === "user" && /Member [ab] of grouped/.test(r.lastUserText)
    );
    expect(members).toHaveLength(2);
    for (const request of members) {
      // Forked: the run's first step is there, the other member's prompt is not.
      expect(countText(request, "Look first at the grouped project.")).toBe(1);
      expect(request.messages.filter((m) => /Member [ab] of grouped/.test(textOf(m))))
        .toHaveLength(1);
    }
    const membersDir = join(h.sandbox.stateDir, "sessions", runId, "members");
    for (const member of ["team.v1.a", "team.v1.b"]) {
      const dir = join(membersDir, member);
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      const files = readdirSync(dir).filter((name) => name.endsWith(".jsonl"));
      expect(files).toHaveLength(1);
      expect(statSync(join(dir, files[0])).mode & 0o777).toBe(0o600);
    }
    // `logs` shows each member's own conversation of the group's step under its name, without
    // the run's conversation its session was forked from.
    const logs = await h.cli(["logs", runId, "team"]);
    expect(logs.code, logs.stderr).toBe(0);
    const [before, a, b] = logs.stdout.split(/^ {2}agent [ab]:$/m);
    expect(before).toMatch(/^-- team \(agentGroup, step 2\) ok$/m);
    expect(a).toMatch(/^ {4}› Member a of grouped: review\./m);
    expect(b).toMatch(/^ {4}› Member b of grouped: review\./m);
    for (const [id, text] of [["a", a], ["b", b]]) {
      expect(text).toMatch(
        new RegExp(`^ {8}↳ workflow: Output accepted for step "team.${id}"`, "m"),
      );
    }
    expect(logs.stdout).not.toContain("Look first");
    expect(a).not.toContain("Member b");
  }, 180_000);
});

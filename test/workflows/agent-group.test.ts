/**
 * The agent group node in the engine: members run at most `maxConcurrency` at once, each through
 * its own accept (tolerant JSON, then its validate, a rejection going back to that member),
 * results keep the members' order, a failing member is recorded rather than thrown, and the
 * node fails only below `minSucceeded`. Bad member lists fail with one clear line.
 */
import { describe, expect, it } from "vitest";
import { agentGroup, compute, defineWorkflow } from "../../mod.ts";
import type { AgentStepExecutor, AgentStepRequest } from "../../src/workflows/index.ts";
import { compileWorkflow, NodeFailure } from "../../src/workflows/index.ts";
import type { AgentGroupMember } from "../../src/workflows/types.ts";
import { runWorkflow } from "../support/workflows.ts";

function groupWorkflow(
  members: AgentGroupMember[] | (() => unknown),
  options: { maxConcurrency?: number; minSucceeded?: number; tools?: string[] } = {},
) {
  return compileWorkflow(defineWorkflow({
    name: "group",
    startAt: "review",
    nodes: {
      review: agentGroup({
        agents: typeof members === "function" ? members as never : () => members,
        ...options,
      }),
      done: compute({ run: ({ outputs }) => outputs.review }),
    },
    edges: [{ from: "review", to: "done" }],
  }));
}

/** Answers each member after a turn of the event loop, recording how many ran at once. */
class CountingExecutor implements AgentStepExecutor {
  running = 0;
  peak = 0;
  readonly requests: AgentStepRequest[] = [];
  readonly answers: Record<string, unknown[]>;
  constructor(answers: Record<string, unknown[]>) {
    this.answers = answers;
  }
  async runStep(request: AgentStepRequest) {
    this.requests.push(request);
    this.running++;
    this.peak = Math.max(this.peak, this.running);
    try {
      await new Promise((resolve) => setImmediate(resolve));
      for (const raw of this.answers[request.nodeId] ?? []) {
        if (raw instanceof Error) throw new NodeFailure("noSubmission", raw.message);
        const verdict = await request.accept(raw);
        if (verdict.ok) return verdict.output;
      }
      throw new NodeFailure("noSubmission", `nothing accepted for ${request.nodeId}`);
    } finally {
      this.running--;
    }
  }
}

const member = (id: string): AgentGroupMember => ({
  id,
  prompt: `review as ${id}`,
  expectedOutput: '{"ok": true}',
  validate: (output) => {
    if ((output as { ok?: unknown }).ok !== true) throw new Error('send {"ok": true}');
  },
});

describe("agentGroup", () => {
  it("bounds concurrency, keeps order, and records a failing member", async () => {
    const ids = ["a", "b", "c", "d", "e"];
    const agent = new CountingExecutor({
      "review.a": ['{"ok": true}'],
      "review.b": [{ ok: false }, { ok: true }],
      "review.c": [new Error("the agent ended its turn 3 times")],
      "review.d": ['```json\n{"ok": true}\n```'],
      "review.e": [{ ok: true }],
    });
    const run = await runWorkflow(
      groupWorkflow(ids.map(member), { maxConcurrency: 2, tools: ["read"] }),
      {
        agent,
      },
    );
    expect(run.last.kind).toBe("complete");
    expect(agent.peak).toBe(2);
    const output = run.results.find((r) => r.nodeId === "review")!.result;
    expect(output).toMatchObject({
      outcome: "ok",
      output: {
        succeeded: 4,
        failed: 1,
        agents: [
          { id: "a", outcome: "ok", output: { ok: true } },
          { id: "b", outcome: "ok", output: { ok: true } },
          {
            id: "c",
            outcome: "failed",
            error: { code: "noSubmission", message: "the agent ended its turn 3 times" },
          },
          { id: "d", outcome: "ok", output: { ok: true } },
          { id: "e", outcome: "ok", output: { ok: true } },
        ],
      },
    });
    // Each member is its own step: its own id, attempt and the group's tools.
    expect(agent.requests.map((r) => r.nodeId).sort()).toEqual(ids.map((id) => `review.${id}`));
    expect(new Set(agent.requests.map((r) => r.attemptId)).size).toBe(5);
    expect(agent.requests.every((r) => r.tools?.join() === "read")).toBe(true);
    // One progress update per settled member, after the opening 0 of 5.
    const progress = run.updates.filter((u) => u.key === "agents").map((u) =>
      (u.data as { completed: number }).completed
    );
    expect(progress).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("fails below minSucceeded, naming the first failure", async () => {
    const agent = new CountingExecutor({
      "review.a": [{ ok: true }],
      "review.b": [new Error("Pi exited")],
    });
    const run = await runWorkflow(
      groupWorkflow([member("a"), member("b")], { minSucceeded: 2 }),
      { agent },
    );
    expect(run.last.kind).toBe("fail");
    expect(run.results[0].result).toMatchObject({
      outcome: "failed",
      error: {
        code: "agentGroupFailed",
        message: 'Agent group "review": 1 of 2 agents succeeded, 2 needed; first failure, ' +
          'agent "b": Pi exited',
      },
    });
  });

  it("refuses an empty, oversized or ambiguous member list", async () => {
    const cases: [unknown, string][] = [
      [[], "agents() must return a non-empty array"],
      [Array.from({ length: 17 }, (_, i) => member(`m${i}`)), "at most 16 run in one group"],
      [[member("a"), member("a")], 'Agent id "a" appears twice'],
      [[{ id: "bad id", prompt: "x" }], "Agent 0 needs an id matching"],
      [[{ id: "a", prompt: "" }], 'Agent "a" needs a prompt'],
    ];
    for (const [members, message] of cases) {
      const run = await runWorkflow(groupWorkflow(() => members), {
        agent: new CountingExecutor({}),
      });
      expect(run.results[0].result).toMatchObject({
        outcome: "failed",
        error: { code: "invalidAgentGroup", message: expect.stringContaining(message) },
      });
    }
  });

  it("checks its options when the workflow is defined", () => {
    expect(() => groupWorkflow([member("a")], { maxConcurrency: 9 })).toThrow(/maxConcurrency/);
    expect(() => groupWorkflow([member("a")], { tools: ["no spaces"] })).toThrow(/Pi tool name/);
  });
});

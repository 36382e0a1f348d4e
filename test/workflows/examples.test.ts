import { join } from "node:path";
import process from "node:process";
import { describe, expect, it } from "vitest";
import { loadWorkflow, normalizeWorkflowInput } from "../../src/workflows/index.ts";
import { answerWaiting, runWorkflow, ScriptedExecutor } from "../support/workflows.ts";

const examples = join(process.cwd(), "examples");
const load = (file: string) => loadWorkflow(join(examples, file), { cwd: examples });

describe("examples", () => {
  it("hello: compute, shell and a relative helper import", async () => {
    const { workflow, identity } = await load("hello.workflow.ts");
    expect(identity.workflowSource.mounted.map((m) => (m as { path: string }).path)).toEqual([
      join(examples, "lib/greet.ts"),
    ]);
    const run = await runWorkflow(workflow, { input: { name: "Ada" } });
    expect(run.last).toEqual({
      kind: "complete",
      output: { message: "Hello, Ada!", steps: ["greet", "echo", "finish"] },
      presentationPrompt: null,
    });
    expect(() => normalizeWorkflowInput(workflow, { name: 5 })).toThrow(
      /input.name must be a string/,
    );
  });

  it("branch: output switch, and the $result.outcome recovery route", async () => {
    const { workflow } = await load("branch.workflow.ts");
    expect((await runWorkflow(workflow, { input: { n: 4 } })).last).toMatchObject({
      output: { result: "4 is even" },
    });
    expect((await runWorkflow(workflow, { input: { n: 7 } })).last).toMatchObject({
      output: { result: "7 is odd" },
    });
    const recovered = await runWorkflow(workflow, { input: { n: -1 } });
    expect(recovered.last).toMatchObject({
      kind: "complete",
      output: { result: "-1 is negative", failure: "commandFailed" },
    });
  });

  it("loop: bounded loop reaches its count", async () => {
    const { workflow } = await load("loop.workflow.ts");
    const run = await runWorkflow(workflow, { input: { times: 4 } });
    expect(run.last).toMatchObject({ kind: "complete", output: { counted: 4, stepsUsed: 5 } });
  });

  it("include: leaves the review through the matching exit", async () => {
    const { workflow } = await load("include.workflow.ts");
    expect((await runWorkflow(workflow, { input: { text: "short" } })).last).toMatchObject({
      output: { published: true, exit: "approved", output: { text: "short" } },
    });
    const long = await runWorkflow(workflow, { input: { text: "x".repeat(50) } });
    expect(long.last).toMatchObject({
      output: {
        published: false,
        review: { exit: "rejected", output: { reason: "50 characters is too long" } },
      },
    });
    expect(long.facts.attempts.map((a) => a.nodeId)).toEqual([
      "prepare",
      "review/inspect",
      "review/reject",
      "shelve",
    ]);
  });

  it("human-decision: parks with onTimeout, then routes on the answer", async () => {
    const { workflow } = await load("human-decision.workflow.ts");
    const parked = await runWorkflow(workflow, { input: { version: "2.0.0" } });
    expect(parked.last).toMatchObject({ kind: "wait", nodeId: "approval" });
    expect(parked.facts.attempts.at(-1)?.output).toMatchObject({
      onTimeout: { afterMs: 600_000, response: { choice: "approve" } },
    });
    const rejected = await runWorkflow(workflow, {
      facts: answerWaiting(parked.facts, { choice: "reject", text: "flaky" }),
    });
    expect(rejected.last).toMatchObject({
      kind: "complete",
      output: { released: null, reason: "flaky" },
    });
  });

  it("checkpoint: declares its answer shape and deadline, routes on the answer or the timeout", async () => {
    const { workflow } = await load("checkpoint.workflow.ts");
    const parked = await runWorkflow(workflow, { input: { task: "x" } });
    expect(parked.last).toMatchObject({ kind: "wait", nodeId: "review" });
    expect(parked.results.at(-1)?.result).toMatchObject({
      outcome: "waiting",
      request: { summary: "Approve the plan for x?" },
      answerSchema: { required: ["approved"] },
    });
    expect(parked.facts.attempts.at(-1)?.deadlineAt).not.toBe(null);
    const approved = await runWorkflow(workflow, {
      facts: answerWaiting(parked.facts, { approved: true }),
    });
    expect(approved.last).toMatchObject({ output: { applied: true, note: null } });
    const expired = structuredClone(parked.facts);
    Object.assign(expired.attempts.at(-1)!, { state: "timed_out", output: undefined });
    expect((await runWorkflow(workflow, { facts: expired })).last).toMatchObject({
      output: { applied: false },
    });
  });

  it("two-turn-agent: runs with a scripted executor and ends with a presentation prompt", async () => {
    const { workflow } = await load("two-turn-agent.workflow.ts");
    const agent = new ScriptedExecutor({
      draft: ['{"steps": "one"}', '{"steps": ["write", "test"]}'],
      review: ['```json\n{"risk": "none", "ok": true}\n```'],
    });
    const run = await runWorkflow(workflow, { input: "add a README", agent });
    expect(agent.rejections).toHaveLength(1);
    expect(run.last).toEqual({
      kind: "complete",
      output: { plan: { steps: ["write", "test"] }, review: { risk: "none", ok: true } },
      presentationPrompt: "Tell the user the plan in two sentences.",
    });
  });
});

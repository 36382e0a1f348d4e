import { describe, expect, it } from "vitest";
import {
  agent,
  assistantMessage,
  checkpoint,
  choice,
  compute,
  decision,
  decisionEdge,
  defineHumanChoices,
  defineWorkflow,
  humanDecision,
  humanDecisionEdge,
  notify,
  textInput,
} from "../../mod.ts";
import { compileWorkflow, decideNext } from "../../src/workflows/index.ts";
import { answerWaiting, runWorkflow, ScriptedExecutor } from "../support/workflows.ts";

describe("engine harness: checkpoints and human decisions", () => {
  it("parks at a checkpoint and continues with the answer as its output", async () => {
    const wf = compileWorkflow(defineWorkflow({
      name: "cp",
      startAt: "ask",
      nodes: {
        ask: checkpoint({ summary: ({ input }) => `Approve ${input}?` }),
        after: compute({ run: ({ outputs, input }) => ({ answer: outputs.ask, input }) }),
      },
      edges: [{ from: "ask", to: "after" }],
    }));
    const first = await runWorkflow(wf, { input: "deploy" });
    expect(first.results[0].result).toEqual({
      outcome: "waiting",
      kind: "checkpoint",
      request: { summary: "Approve deploy?" },
    });
    expect(first.last).toEqual({ kind: "wait", nodeId: "ask", attemptId: "attempt-1" });
    // Waiting for a person has no wall-clock limit unless the author sets timeoutMs.
    expect(first.facts.attempts[0].deadlineAt).toBe(null);
    const resumed = await runWorkflow(wf, { facts: answerWaiting(first.facts, { go: true }) });
    expect(resumed.last).toMatchObject({
      kind: "complete",
      output: { answer: { go: true }, input: "deploy" },
    });
  });

  it("parks with the answer schema as declared, an empty one (any answer) included", async () => {
    const wf = compileWorkflow(defineWorkflow({
      name: "cp-any",
      startAt: "ask",
      nodes: { ask: checkpoint({ summary: "Anything?", answerSchema: {} }) },
      edges: [],
    }));
    const first = await runWorkflow(wf);
    expect(first.results[0].result).toEqual({
      outcome: "waiting",
      kind: "checkpoint",
      request: { summary: "Anything?" },
      answerSchema: {},
    });
  });

  const choices = defineHumanChoices({
    ship: choice({ label: "Ship" }),
    stop: choice({
      label: "Stop",
      input: textInput({ name: "why", prompt: "Why?", maxLength: 20 }),
    }),
  });
  const hd = compileWorkflow(defineWorkflow({
    name: "hd",
    startAt: "decide",
    nodes: {
      decide: humanDecision({
        choices,
        onTimeout: { afterMs: 60_000, response: { choice: "ship" } },
        request: () => ({
          title: "Ship?",
          subject: "release",
          presentation: {
            schema: "pi-workflows.decision-presentation.v1",
            summary: "Ship it",
            blocks: [{ kind: "paragraph", text: "ready" }],
          },
        }),
      }),
      shipped: compute({ run: () => "shipped" }),
      stopped: compute({ run: ({ outputs }) => outputs.decide }),
    },
    edges: [
      humanDecisionEdge({ from: "decide", choices, cases: { ship: "shipped", stop: "stopped" } }),
    ],
  }));

  it("a human decision parks with its request, choices and timeout default", async () => {
    const run = await runWorkflow(hd);
    expect(run.results[0].result).toMatchObject({
      outcome: "waiting",
      kind: "humanDecision",
      request: {
        schema: "pi-workflows.human-decision-request.v1",
        audience: "owner",
        title: "Ship?",
        onTimeout: { afterMs: 60_000, response: { choice: "ship" } },
        choices: { ship: { label: "Ship" } },
      },
    });
  });

  it("routes on the recorded answer", async () => {
    const parked = await runWorkflow(hd);
    const answered = (answer: { choice: string; text?: string }) =>
      runWorkflow(hd, { facts: answerWaiting(parked.facts, answer) });
    expect((await answered({ choice: "ship" })).last).toMatchObject({
      kind: "complete",
      output: "shipped",
    });
    expect((await answered({ choice: "stop", text: "not yet" })).last).toMatchObject({
      output: { choice: "stop", text: "not yet" },
    });
  });

  it("resolves an onTimeout function at run time and checks what it returns", async () => {
    const make = (afterMs: number, choice: string) =>
      compileWorkflow(defineWorkflow({
        name: "fn",
        input: (raw) => raw as { wait: number },
        startAt: "d",
        nodes: {
          d: humanDecision({
            choices,
            onTimeout: ({ input }) => ({ afterMs: input.wait * afterMs, response: { choice } }),
            request: () => ({
              title: "t",
              subject: "s",
              presentation: {
                schema: "pi-workflows.decision-presentation.v1",
                summary: "",
                blocks: [],
              },
            }),
          }),
        },
      }));
    const good = await runWorkflow(make(1000, "ship"), { input: { wait: 5 } });
    expect(good.results[0].result).toMatchObject({
      outcome: "waiting",
      request: { onTimeout: { afterMs: 5000, response: { choice: "ship" } } },
    });
    const bad = await runWorkflow(make(1000, "nope"), { input: { wait: 5 } });
    expect(bad.last).toMatchObject({
      kind: "fail",
      error: {
        code: "invalidRequest",
        message: "Human decision onTimeout response: choice must be one of ship, stop",
      },
    });
    const zero = await runWorkflow(make(0, "ship"), { input: { wait: 5 } });
    expect(zero.last).toMatchObject({ error: { message: expect.stringMatching(/afterMs/) } });
  });

  it("names a missing presentation, or its missing schema, in the node failure", async () => {
    const make = (presentation: unknown) =>
      compileWorkflow(defineWorkflow({
        name: "nopres",
        startAt: "d",
        nodes: {
          d: humanDecision({
            choices,
            request: () => ({ title: "t", subject: "s", presentation } as never),
          }),
        },
      }));
    const missing = await runWorkflow(make(undefined));
    expect(missing.last).toMatchObject({
      kind: "fail",
      error: {
        code: "invalidRequest",
        message: expect.stringMatching(/^Human decision request needs a presentation \(/),
      },
    });
    const noSchema = await runWorkflow(make({ summary: "", blocks: [] }));
    expect(noSchema.last).toMatchObject({
      error: {
        code: "invalidRequest",
        message: "Invalid decision presentation: schema is missing: set it to " +
          '"pi-workflows.decision-presentation.v1"',
      },
    });
  });

  it("rejects an oversized presentation with a clear node failure", async () => {
    const wf = compileWorkflow(defineWorkflow({
      name: "big",
      startAt: "d",
      nodes: {
        d: humanDecision({
          choices,
          request: () => ({
            title: "t",
            subject: "s",
            presentation: {
              schema: "pi-workflows.decision-presentation.v1",
              summary: "x".repeat(20_000),
              blocks: [],
            },
          }),
        }),
      },
    }));
    const run = await runWorkflow(wf);
    expect(run.last).toMatchObject({
      kind: "fail",
      error: { code: "invalidRequest", message: expect.stringMatching(/over 16000/) },
    });
  });
});

describe("engine harness: agents, notify, presentation", () => {
  const wf = compileWorkflow(defineWorkflow({
    name: "ag",
    presentationPrompt: ({ output }) => `Report ${JSON.stringify(output)}`,
    startAt: "plan",
    nodes: {
      plan: agent({
        prompt: ({ input }) => `Plan ${input}`,
        expectedOutput: '{"steps": []}',
        validate: (o) => {
          if (!Array.isArray((o as { steps?: unknown }).steps)) {
            throw new Error('send {"steps": [...]}');
          }
          return { steps: (o as { steps: string[] }).steps.map((s) => s.toUpperCase()) };
        },
      }),
      pick: decision({ question: "Good?", choices: ["yes", "no"] }),
      say: assistantMessage({ prompt: "Tell the user" }),
      tell: notify({
        message: ({ outputs }) => `steps: ${JSON.stringify(outputs.plan)}`,
        kind: "final",
      }),
      no: compute({ run: () => "no" }),
    },
    edges: [
      { from: "plan", to: "pick" },
      decisionEdge({ from: "pick", choices: ["yes", "no"], cases: { yes: "say", no: "no" } }),
      { from: "say", to: "tell" },
    ],
  }));

  it("accepts tolerant JSON, sends validate errors back to the model, and routes decisions", async () => {
    const executor = new ScriptedExecutor({
      plan: ["not json at all", 'Sure! ```json\n{"steps": ["a", "b"]}\n```'],
      pick: ['{"route": "maybe"}', 'I pick {"route": "yes"} because'],
      say: [{ text: "All done." }],
    });
    const run = await runWorkflow(wf, { input: "x", agent: executor });
    expect(executor.rejections).toEqual([
      { nodeId: "plan", message: 'Output rejected: send {"steps": [...]}' },
      {
        nodeId: "pick",
        message: 'Output rejected: "route" must be one of "yes", "no"; send {"route": "<choice>"}',
      },
    ]);
    expect(executor.requests.map((r) => [r.nodeId, r.kind])).toEqual([
      ["plan", "agent"],
      ["pick", "agent"],
      ["say", "assistantMessage"],
    ]);
    expect(executor.requests[0]).toMatchObject({
      prompt: "Plan x",
      expectedOutput: '{"steps": []}',
    });
    expect(executor.requests[1].prompt).toMatch(/^Good\?\n\nChoose exactly one of: yes, no/);
    expect(run.results.at(-1)?.result).toEqual({
      outcome: "ok",
      output: { kind: "final", message: 'steps: {"steps":["A","B"]}' },
      notification: { kind: "final", message: 'steps: {"steps":["A","B"]}' },
    });
    expect(run.last).toEqual({
      kind: "complete",
      output: { kind: "final", message: 'steps: {"steps":["A","B"]}' },
      presentationPrompt:
        'Report {"kind":"final","message":"steps: {\\"steps\\":[\\"A\\",\\"B\\"]}"}',
    });
  });

  it("fails an agent step when the executor gives up or is unavailable", async () => {
    const run = await runWorkflow(wf, {
      agent: new ScriptedExecutor({ plan: [{ fail: "model offline" }] }),
    });
    expect(run.last).toEqual({
      kind: "fail",
      outcome: "failed",
      error: { code: "agentFailed", message: "model offline" },
    });
    const none = await runWorkflow(wf, {
      agent: (await import("../../src/workflows/index.ts")).unavailableAgentExecutor(
        "not in this release",
      ),
    });
    expect(none.last).toMatchObject({
      error: {
        code: "agentUnavailable",
        message: 'Agent step "plan" cannot run: not in this release',
      },
    });
  });

  it("prepareAgentStep() renders a model step's prompt without running it", async () => {
    const { prepareAgentStep } = await import("../../src/workflows/index.ts");
    const facts = { runId: "r", workflowName: "ag", input: "x", attempts: [] };
    expect(await prepareAgentStep(wf, "plan", { facts, attemptId: "a" })).toEqual({
      kind: "agent",
      prompt: "Plan x",
      expectedOutput: '{"steps": []}',
      statusDetail: null,
    });
    expect(await prepareAgentStep(wf, "pick", { facts, attemptId: "a" })).toMatchObject({
      expectedOutput: '{"route": "yes" | "no"}',
    });
    expect((await prepareAgentStep(wf, "say", { facts, attemptId: "a" })).kind).toBe(
      "assistantMessage",
    );
    await expect(prepareAgentStep(wf, "no", { facts, attemptId: "a" })).rejects.toThrow(
      /not a model step/,
    );
  });

  it("acceptAgentSubmission() applies the same rules outside execution", async () => {
    const { acceptAgentSubmission } = await import("../../src/workflows/index.ts");
    const facts = { runId: "r", workflowName: "ag", input: "x", attempts: [] };
    expect(await acceptAgentSubmission(wf, "plan", { facts, attemptId: "a" }, '{"steps":["q"]}'))
      .toEqual({
        ok: true,
        output: { steps: ["Q"] },
      });
    expect(await acceptAgentSubmission(wf, "plan", { facts, attemptId: "a" }, "{}")).toEqual({
      ok: false,
      message: 'Output rejected: send {"steps": [...]}',
    });
    expect(await acceptAgentSubmission(wf, "tell", { facts, attemptId: "a" }, "{}")).toMatchObject({
      ok: false,
    });
  });
});

it("decideNext() is deterministic: the same facts give the same step", () => {
  const wf = compileWorkflow(
    defineWorkflow({ name: "d", startAt: "a", nodes: { a: compute({ run: () => 1 }) } }),
  );
  const facts = { runId: "r", workflowName: "d", input: null, attempts: [] };
  expect(decideNext(wf, facts)).toEqual(decideNext(wf, facts));
});

import { describe, expect, it } from "vitest";
import { checkpoint, compute, defineWorkflow, shell } from "../../mod.ts";
import type { JsonValue } from "../../src/protocol/canonical-json.ts";
import type { AttemptFact, AttemptState, RunFacts } from "../../src/protocol/run-facts.ts";
import { compileWorkflow, decideNext } from "../../src/workflows/index.ts";

const c = () => compute({ run: () => 1 });

function facts(
  attempts: [string, AttemptState, JsonValue?][],
  extra: Partial<RunFacts> = {},
): RunFacts {
  return {
    runId: "r",
    workflowName: "w",
    input: null,
    attempts: attempts.map(([nodeId, state, value], i): AttemptFact => ({
      attemptId: `a${i + 1}`,
      nodeId,
      sequence: i + 1,
      nodeKind: "compute",
      effect: nodeId.startsWith("sh") ? "external" : "pure",
      state,
      startedAt: 1000,
      finishedAt: 1500,
      deadlineAt: null,
      ...(state === "ok" || state === "waiting" ? { output: value ?? null } : {}),
      ...(state === "failed" || state === "timed_out" || state === "cancelled"
        ? { error: { code: (value as string) ?? "nodeFailed", message: "it broke" } }
        : {}),
    })),
    ...extra,
  };
}

const wf = compileWorkflow(defineWorkflow({
  name: "w",
  startAt: "a",
  nodes: {
    a: c(),
    b: c(),
    sh: shell({ exec: () => ({ command: "true" }) }),
    r: c(),
    k: checkpoint(),
    end: c(),
  },
  edges: [
    { from: "a", switch: { on: "$.go", cases: { b: "b", sh: "sh", k: "k", deep: "end" } } },
    { from: "b", switch: { on: "$output.x.y", cases: { "1": "end", true: "r" } } },
    {
      from: "sh",
      switch: { on: "$result.outcome", cases: { ok: "end", failed: "r" } },
    },
    { from: "r", switch: { on: "$result.error.code", cases: { nodeFailed: "end" } } },
    { from: "k", to: "end" },
  ],
}));

describe("decideNext() routing", () => {
  it("starts at the start node with no attempts", () => {
    expect(decideNext(wf, facts([]))).toMatchObject({
      kind: "startNode",
      nodeId: "a",
      effect: "pure",
      visit: 1,
    });
  });

  it("switches on $.path and $output.path, matching scalars as strings", () => {
    expect(decideNext(wf, facts([["a", "ok", { go: "b" }]]))).toMatchObject({ nodeId: "b" });
    expect(decideNext(wf, facts([["a", "ok", { go: "b" }], ["b", "ok", { x: { y: 1 } }]])))
      .toMatchObject({ nodeId: "end" });
    expect(decideNext(wf, facts([["a", "ok", { go: "b" }], ["b", "ok", { x: { y: true } }]])))
      .toMatchObject({ nodeId: "r" });
  });

  it("fails with routingError on a missing case or a missing or non-scalar value", () => {
    expect(decideNext(wf, facts([["a", "ok", { go: "zzz" }]]))).toEqual({
      kind: "fail",
      outcome: "failed",
      error: {
        code: "routingError",
        message: 'Routing failed at "a": no case for $.go = "zzz" (cases: b, sh, k, deep)',
      },
    });
    expect(decideNext(wf, facts([["a", "ok", {}]]))).toMatchObject({
      kind: "fail",
      error: { code: "routingError", message: 'Routing failed at "a": $.go is missing' },
    });
    expect(decideNext(wf, facts([["a", "ok", { go: ["b"] }]]))).toMatchObject({
      error: { message: expect.stringContaining("not a string, number or boolean") },
    });
  });

  it("routes failures only through $result switches", () => {
    expect(decideNext(wf, facts([["a", "ok", { go: "sh" }], ["sh", "failed"]]))).toMatchObject({
      nodeId: "r",
    });
    expect(decideNext(wf, facts([["a", "ok", { go: "sh" }], ["sh", "ok", {}]]))).toMatchObject({
      nodeId: "end",
    });
    // A failure on a node whose edge switches on its output does not route: the run fails.
    expect(decideNext(wf, facts([["a", "failed", "boom"]]))).toEqual({
      kind: "fail",
      outcome: "failed",
      error: { code: "boom", message: "it broke" },
    });
    // $result.error.code routes a failure by its code.
    expect(
      decideNext(
        wf,
        facts([["a", "ok", { go: "sh" }], ["sh", "failed"], ["r", "failed", "nodeFailed"]]),
      ),
    )
      .toMatchObject({ nodeId: "end" });
  });

  it("a failure with no matching $result case ends the run with its own outcome", () => {
    expect(decideNext(wf, facts([["a", "ok", { go: "sh" }], ["sh", "timed_out", "nodeTimedOut"]])))
      .toMatchObject({
        kind: "fail",
        outcome: "timed_out",
        error: { code: "nodeTimedOut" },
      });
  });

  it("cancelled never routes, even with a $result switch", () => {
    expect(decideNext(wf, facts([["a", "ok", { go: "sh" }], ["sh", "cancelled", "nodeCancelled"]])))
      .toMatchObject({
        kind: "fail",
        outcome: "cancelled",
      });
  });

  it("a node with no out-edge completes the run with its output", () => {
    expect(decideNext(wf, facts([["a", "ok", { go: "deep" }], ["end", "ok", { done: 1 }]])))
      .toEqual({
        kind: "complete",
        output: { done: 1 },
        presentationPrompt: null,
      });
  });

  it("re-runs an interrupted or running pure node and blocks an interrupted external one", () => {
    expect(decideNext(wf, facts([["a", "interrupted"]]))).toMatchObject({
      kind: "startNode",
      nodeId: "a",
      visit: 1,
    });
    expect(decideNext(wf, facts([["a", "running"]]))).toMatchObject({
      kind: "startNode",
      nodeId: "a",
    });
    expect(decideNext(wf, facts([["a", "ok", { go: "sh" }], ["sh", "interrupted"]]))).toMatchObject(
      {
        kind: "blocked",
        nodeId: "sh",
        attemptId: "a2",
        error: { code: "effectAmbiguous" },
      },
    );
    expect(decideNext(wf, facts([["a", "ok", { go: "sh" }], ["sh", "running"]]))).toMatchObject({
      kind: "blocked",
    });
    // After an operator reviewed the effect and resumed, the engine runs the node again.
    expect(decideNext(wf, {
      ...facts([["a", "ok", { go: "sh" }], ["sh", "interrupted"]]),
      approvedRetry: { attemptId: "a2" },
    })).toMatchObject({ kind: "startNode", nodeId: "sh", visit: 1 });
  });

  it("waits on an unanswered checkpoint and continues from its answer", () => {
    const waiting = facts([["a", "ok", { go: "k" }], ["k", "waiting", { summary: null }]]);
    expect(decideNext(wf, waiting)).toEqual({ kind: "wait", nodeId: "k", attemptId: "a2" });
    // The host records the answer as the attempt's ok output; routing goes on from there.
    waiting.attempts[1].state = "ok";
    waiting.attempts[1].output = { ok: true };
    expect(decideNext(wf, waiting)).toMatchObject({ kind: "startNode", nodeId: "end" });
  });

  it("reports facts naming a node the workflow does not have", () => {
    expect(decideNext(wf, facts([["ghost", "ok", 1]]))).toMatchObject({
      kind: "fail",
      error: { code: "unknownNode" },
    });
  });
});

describe("decideNext() step budget", () => {
  const loop = compileWorkflow(defineWorkflow({
    name: "loop",
    maxSteps: 3,
    startAt: "t",
    nodes: { t: c() },
    edges: [{ from: "t", to: "t" }],
  }));

  it("counts committed attempts, ignoring interrupted and running ones", () => {
    expect(decideNext(loop, facts([["t", "ok"], ["t", "ok"]]))).toMatchObject({
      kind: "startNode",
      visit: 3,
    });
    expect(
      decideNext(loop, facts([["t", "ok"], ["t", "interrupted"], ["t", "ok"], ["t", "running"]])),
    )
      .toMatchObject({ kind: "startNode", visit: 3 });
    expect(decideNext(loop, facts([["t", "ok"], ["t", "ok"], ["t", "ok"]]))).toMatchObject({
      kind: "fail",
      outcome: "failed",
      error: { code: "maxStepsExceeded" },
    });
  });
});

import { describe, expect, it } from "vitest";
import { action, compute, defineWorkflow, includeWorkflow, notify } from "../../mod.ts";
import { compileWorkflow, DEFAULT_NODE_TIMEOUT_MS } from "../../src/workflows/index.ts";
import { DeadlineClock, runWorkflow } from "../support/workflows.ts";

describe("engine harness: loops and budgets", () => {
  const counter = (maxSteps: number) =>
    compileWorkflow(defineWorkflow({
      name: "count",
      maxSteps,
      startAt: "tick",
      input: (raw) => raw as { to: number },
      nodes: {
        tick: compute({
          run: ({ outputs, state }) => ({
            n: ((outputs.tick as { n?: number })?.n ?? 0) + 1,
            visit: state.visit,
          }),
        }),
        done: compute({ run: ({ outputs }) => outputs.tick }),
      },
      edges: [{
        from: "tick",
        switch: { on: "$.n", cases: { "1": "tick", "2": "tick", "3": "tick", "4": "done" } },
      }],
    }));

  it("runs a loop to completion, each visit seeing the previous output", async () => {
    const run = await runWorkflow(counter(10));
    expect(run.last).toEqual({
      kind: "complete",
      output: { n: 4, visit: 4 },
      presentationPrompt: null,
    });
    expect(run.facts.attempts.map((a) => a.nodeId)).toEqual([
      "tick",
      "tick",
      "tick",
      "tick",
      "done",
    ]);
  });

  it("fails with maxStepsExceeded when the loop outruns maxSteps", async () => {
    const run = await runWorkflow(counter(3));
    expect(run.last).toMatchObject({ kind: "fail", error: { code: "maxStepsExceeded" } });
    expect(run.facts.attempts).toHaveLength(3);
  });

  it("carries the budget across workers and re-runs an interrupted pure node", async () => {
    const wf = counter(5);
    const first = await runWorkflow(wf, { crashAt: { nodeId: "tick", visit: 3 } });
    expect(first.facts.attempts.at(-1)?.state).toBe("running");
    // The host marks the uncommitted attempt interrupted; a new worker continues from the facts.
    first.facts.attempts.at(-1)!.state = "interrupted";
    const second = await runWorkflow(wf, { facts: first.facts });
    expect(second.last).toMatchObject({ kind: "complete", output: { n: 4 } });
    expect(second.facts.attempts.filter((a) => a.state !== "interrupted")).toHaveLength(5);
  });
});

describe("engine harness: deadlines and failures", () => {
  it("times out a node at its deadline and routes through $result.outcome", async () => {
    const clock = new DeadlineClock();
    const wf = compileWorkflow(defineWorkflow({
      name: "slow",
      startAt: "wait",
      nodes: {
        wait: action({
          timeoutMs: 1000,
          run: ({ signal }) => {
            clock.advance(1500);
            return new Promise(() => signal.throwIfAborted());
          },
        }),
        recover: compute({ run: ({ results }) => ({ recovered: results.wait.outcome }) }),
      },
      edges: [{ from: "wait", switch: { on: "$result.outcome", cases: { timed_out: "recover" } } }],
    }));
    const run = await runWorkflow(wf, { clock });
    expect(run.results[0].result).toEqual({
      outcome: "timed_out",
      error: { code: "nodeTimedOut", message: "The node reached its deadline" },
    });
    expect(run.facts.attempts[0].deadlineAt).toBe(run.facts.attempts[0].startedAt + 1000);
    expect(run.last).toMatchObject({ kind: "complete", output: { recovered: "timed_out" } });
  });

  it("resolves timeoutMs as default, null, number and callback; a bad callback fails the node", async () => {
    const wf = compileWorkflow(defineWorkflow({
      name: "t",
      startAt: "a",
      nodes: {
        a: compute({ run: () => 1 }),
        b: compute({ run: () => 1, timeoutMs: null }),
        c: compute({ run: () => 1, timeoutMs: ({ state }) => state.stepsUsed * 100 }),
        d: compute({ run: () => 1, timeoutMs: () => -5 }),
      },
      edges: [{ from: "a", to: "b" }, { from: "b", to: "c" }, { from: "c", to: "d" }],
    }));
    const run = await runWorkflow(wf);
    const [a, b, c, d] = run.facts.attempts;
    expect(a.deadlineAt! - a.startedAt).toBe(DEFAULT_NODE_TIMEOUT_MS);
    expect(b.deadlineAt).toBeNull();
    expect(c.deadlineAt! - c.startedAt).toBe(300);
    expect(d).toMatchObject({ state: "failed", error: { code: "timeoutCallbackFailed" } });
    expect(d.error?.message).toMatch(/non-negative integer/);
  });

  it("turns a thrown error into failed/nodeFailed and a non-JSON output into outputNotJson", async () => {
    const wf = compileWorkflow(defineWorkflow({
      name: "f",
      startAt: "a",
      nodes: {
        a: compute({ run: () => ({ when: new Date(0) }) }),
        b: compute({
          run: () => {
            throw new Error("disk full\nsecond line");
          },
        }),
      },
      edges: [{ from: "a", switch: { on: "$result.outcome", cases: { failed: "b" } } }],
    }));
    const run = await runWorkflow(wf);
    expect(run.facts.attempts[0].error?.code).toBe("outputNotJson");
    expect(run.last).toEqual({
      kind: "fail",
      outcome: "failed",
      error: { code: "nodeFailed", message: "disk full second line" },
    });
  });

  it("fails outputs over the size limit and overlong notify messages with clear codes", async () => {
    const wf = compileWorkflow(defineWorkflow({
      name: "big",
      startAt: "a",
      nodes: {
        a: compute({ run: () => "x".repeat(1_000_000) }),
        b: notify({ message: "y".repeat(70_000) }),
      },
      edges: [{ from: "a", switch: { on: "$result.outcome", cases: { failed: "b" } } }],
    }));
    const run = await runWorkflow(wf);
    expect(run.facts.attempts[0].error).toEqual({
      code: "outputTooLarge",
      message: "Compute output is over 960 KiB of JSON: return less, or store large data in a file",
    });
    expect(run.last).toMatchObject({ kind: "fail", error: { code: "messageTooLong" } });
  });

  it("gives read-only outputs and results that behave like plain objects", async () => {
    const wf = compileWorkflow(defineWorkflow({
      name: "ctx",
      startAt: "a",
      nodes: {
        a: compute({ run: () => ({ x: 1 }) }),
        b: compute({
          run: ({ outputs, results }) => {
            let writeError = "";
            try {
              (outputs as Record<string, unknown>).a = 2;
            } catch (error) {
              writeError = (error as Error).message;
            }
            return {
              whole: outputs,
              spread: { ...outputs },
              keys: Object.keys(results),
              has: ["a" in outputs, "zzz" in outputs],
              outcome: results.a.outcome,
              writeError,
            };
          },
        }),
      },
      edges: [{ from: "a", to: "b" }],
    }));
    const run = await runWorkflow(wf);
    expect(run.last).toMatchObject({
      kind: "complete",
      output: {
        whole: { a: { x: 1 } },
        spread: { a: { x: 1 } },
        keys: ["a"],
        has: [true, false],
        outcome: "ok",
        writeError: "Context outputs are read-only",
      },
    });
  });

  it("reports cancellation when the signal aborts for another reason", async () => {
    const wf = compileWorkflow(defineWorkflow({
      name: "c",
      startAt: "a",
      nodes: { a: compute({ run: () => 1 }) },
    }));
    const controller = new AbortController();
    controller.abort(new Error("paused"));
    const { executeNode, unavailableAgentExecutor } = await import("../../src/workflows/index.ts");
    const result = await executeNode(wf, "a", {
      facts: { runId: "r", workflowName: "c", input: null, attempts: [] },
      attemptId: "x",
      signal: controller.signal,
      publishUpdate: () => {},
      agent: unavailableAgentExecutor("none"),
    });
    expect(result).toMatchObject({ outcome: "cancelled", error: { code: "nodeCancelled" } });
  });
});

describe("engine harness: includes", () => {
  const child = defineWorkflow({
    name: "child",
    maxSteps: 2,
    input: (raw) => {
      if (typeof (raw as { n?: unknown })?.n !== "number") throw new Error("n must be a number");
      return raw as { n: number };
    },
    startAt: "double",
    nodes: {
      double: compute({ run: ({ input }) => ({ n: input.n * 2 }) }),
      big: compute({ run: ({ outputs }) => outputs.double }),
      small: compute({ run: ({ outputs }) => ({ ...(outputs.double as object), small: true }) }),
    },
    edges: [{
      from: "double",
      switch: { on: "$.n", cases: { "2": "small", "4": "small", "20": "big", "40": "big" } },
    }],
    exits: {
      large: { from: "big", validate: (o) => ({ ...(o as object), checked: true }) },
      little: { from: "small" },
    },
  });
  const parent = (n: number) =>
    compileWorkflow(defineWorkflow({
      name: "parent",
      input: () => ({ n }),
      startAt: "prep",
      includes: { sub: includeWorkflow(child, { input: ({ outputs }) => outputs.prep }) },
      nodes: {
        prep: compute({ run: ({ input }) => ({ n: input.n }) }),
        onLarge: compute({ run: ({ outputs }) => ({ via: "large", sub: outputs.sub }) }),
        onLittle: compute({ run: ({ outputs }) => ({ via: "little", sub: outputs.sub }) }),
      },
      edges: [
        { from: "prep", to: "sub" },
        { from: "sub.large", to: "onLarge" },
        { from: "sub.little", to: "onLittle" },
      ],
    }));

  it("runs the child with its own input and leaves through the right exit", async () => {
    const big = await runWorkflow(parent(10), { input: { n: 10 } });
    expect(big.facts.attempts.map((a) => a.nodeId)).toEqual([
      "prep",
      "sub/double",
      "sub/big",
      "onLarge",
    ]);
    expect(big.last).toMatchObject({
      kind: "complete",
      output: { via: "large", sub: { exit: "large", output: { n: 20, checked: true } } },
    });
    const small = await runWorkflow(parent(1));
    expect(small.last).toMatchObject({
      output: { via: "little", sub: { exit: "little", output: { n: 2, small: true } } },
    });
  });

  it("fails a child node whose included input is rejected", async () => {
    const wf = compileWorkflow(defineWorkflow({
      name: "p2",
      startAt: "prep",
      includes: { sub: includeWorkflow(child, { input: { n: "x" } }) },
      nodes: { prep: compute({ run: () => 1 }), end: compute({ run: () => 1 }) },
      edges: [{ from: "prep", to: "sub" }, { from: "sub.large", to: "end" }, {
        from: "sub.little",
        to: "end",
      }],
    }));
    const run = await runWorkflow(wf);
    expect(run.last).toMatchObject({ kind: "fail", error: { code: "includeInputFailed" } });
    expect((run.last as { error: { message: string } }).error.message).toMatch(
      /n must be a number/,
    );
  });

  it("applies a child's maxSteps per invocation", async () => {
    const looping = defineWorkflow({
      name: "looping",
      maxSteps: 3,
      startAt: "spin",
      nodes: { spin: compute({ run: () => ({ again: true }) }), out: compute({ run: () => 1 }) },
      edges: [{ from: "spin", switch: { on: "$.again", cases: { true: "spin", false: "out" } } }],
      exits: { out: { from: "out" } },
    });
    const wf = compileWorkflow(defineWorkflow({
      name: "p3",
      startAt: "l",
      includes: { l: includeWorkflow(looping) },
      nodes: { end: compute({ run: () => 1 }) },
      edges: [{ from: "l.out", to: "end" }],
    }));
    const run = await runWorkflow(wf);
    expect(run.last).toMatchObject({ kind: "fail", error: { code: "maxStepsExceeded" } });
    expect(run.facts.attempts).toHaveLength(3);
  });
});

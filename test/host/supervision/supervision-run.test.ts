import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { queryAll } from "../../../src/state/statements.ts";
import { answerDecision } from "../../../src/state/transitions/decisions.ts";
import { isTerminal } from "../../support/supervision.ts";
import { harnessPerTest } from "../../support/harness-per-test.ts";

const THREE_STEPS = `
import { compute, defineWorkflow, shell } from "pi-workflows";
export default defineWorkflow({
  name: "three",
  input: (raw) => ({ n: Number((raw ?? {}).n ?? 1) }),
  startAt: "double",
  nodes: {
    double: compute({ run: ({ input }) => ({ value: input.n * 2 }) }),
    echo: shell({
      timeoutMs: 10_000,
      exec: ({ outputs }) => ({ command: "printf", args: ["%s", String(outputs.double.value)] }),
      parse: (r) => ({ printed: r.stdout }),
    }),
    finish: compute({ run: ({ outputs }) => ({ result: outputs.echo.printed + "!" }) }),
  },
  edges: [{ from: "double", to: "echo" }, { from: "echo", to: "finish" }],
});
`;

const newHarness = harnessPerTest();

describe("createSupervision()", () => {
  it("runs a three-node workflow to completion in a real worker process", async () => {
    const h = await newHarness();
    const path = h.writeWorkflow("three.workflow.ts", THREE_STEPS);
    const runId = await h.startRun(path, { n: 21 });
    const run = await h.waitForRun(runId, isTerminal);
    expect(run.state).toBe("completed");
    expect(run.queueState).toBe("done");
    expect(run.output).toEqual({ result: "42!" });
    await h.waitForRun(runId, () => h!.supervision.activeWorkerCount() === 0);
    const workers = queryAll<{ status: string }>(
      h.store,
      "SELECT status FROM run_workers WHERE run_id = :runId",
      { runId },
    );
    expect(workers.map((w) => w.status)).toEqual(["exited"]);
    expect(h.invariants()).toEqual([]);
  });

  it("runs the same workflow with workers started under Deno", async () => {
    const deno = join(import.meta.dirname, "..", "..", "..", "node_modules", ".bin", "deno");
    const main = join(import.meta.dirname, "..", "..", "..", "src", "cli", "main.ts");
    const h = await newHarness({}, {
      workerCommand: (args) => ({ command: deno, args: ["run", "-A", main, ...args] }),
      childEnv: { DENO_NO_UPDATE_CHECK: "1" },
    });
    const path = h.writeWorkflow(
      "where.workflow.ts",
      THREE_STEPS.replace(
        `finish: compute({ run: ({ outputs }) => ({ result: outputs.echo.printed + "!" }) }),`,
        `finish: compute({ run: ({ outputs }) => ({ result: outputs.echo.printed + "!", deno: "Deno" in globalThis }) }),`,
      ),
    );
    const runId = await h.startRun(path, { n: 5 });
    const run = await h.waitForRun(runId, isTerminal);
    expect([run.state, run.output]).toEqual(["completed", { result: "10!", deno: true }]);
    expect(h.invariants()).toEqual([]);
  });

  it("parks at a human decision: waiting/parked, a pending decision, no worker left", async () => {
    const h = await newHarness();
    const example = join(
      import.meta.dirname,
      "..",
      "..",
      "..",
      "examples",
      "human-decision.workflow.ts",
    );
    const runId = await h.startRun(example, { version: "2.0.0" });
    const run = await h.waitForRun(runId, (r) => r.state === "waiting");
    expect(run.queueState).toBe("parked");
    await h.waitForRun(runId, () => h!.supervision.activeWorkerCount() === 0);
    const decisions = queryAll<{ node_id: string; kind: string; state: string }>(
      h.store,
      "SELECT node_id, kind, state FROM human_decisions WHERE run_id = :runId",
      { runId },
    );
    expect(decisions).toEqual([{ node_id: "approval", kind: "humanDecision", state: "pending" }]);
    const epochs = queryAll<{ status: string }>(
      h.store,
      "SELECT status FROM run_workers WHERE run_id = :runId",
      { runId },
    ).map((r) => r.status);
    expect(epochs).toEqual(["exited"]);
    expect(h.invariants()).toEqual([]);

    // A person answers: the run resumes in place with a new worker and routes on the choice.
    const attemptId = queryAll<{ attempt_id: string }>(
      h.store,
      "SELECT attempt_id FROM human_decisions WHERE run_id = :runId",
      { runId },
    )[0].attempt_id;
    answerDecision(h.store, {
      runId,
      nodeId: "approval",
      attemptId,
      kind: "humanDecision",
      answer: { choice: "approve" },
      ownerId: "test",
    });
    h.supervision.wake();
    const done = await h.waitForRun(runId, isTerminal);
    expect([done.state, done.output]).toEqual(["completed", { released: "2.0.0" }]);
    expect(h.invariants()).toEqual([]);
  });
});

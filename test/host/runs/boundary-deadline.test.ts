/**
 * Workflow code between attempts (routing, `timeoutMs` callbacks, `presentationPrompt`) runs under
 * a host deadline: a worker stuck there is stopped, and after the crash limit the run fails with
 * `workerTimedOut` instead of holding a slot forever.
 */
import { describe, expect, it } from "vitest";
import { queryAll } from "../../../src/state/statements.ts";
import { isTerminal } from "../../support/supervision.ts";
import { harnessPerTest } from "../../support/harness-per-test.ts";

const newHarness = harnessPerTest();

const spinning = (where: "presentation" | "timeout") => `
import { compute, defineWorkflow } from "pi-workflows";
const spin = () => { for (;;) {} };
export default defineWorkflow({
  name: "spin",
  startAt: "first",
  ${where === "presentation" ? "presentationPrompt: () => spin()," : ""}
  nodes: {
    first: compute({ run: () => ({ ok: true }) }),
    second: compute({
      ${where === "timeout" ? "timeoutMs: () => spin()," : ""}
      run: () => ({ done: true }),
    }),
  },
  edges: [{ from: "first", to: "second" }],
});
`;

// Short nodes for longer than the bound, then the spin: the bound's timer outlives the first
// close (it is kept and moved on, not armed again at every boundary) and still catches it.
const spinningAfterChain = `
import { compute, defineWorkflow } from "pi-workflows";
const spin = () => { for (;;) {} };
const short = () => compute({ run: async () => {
  await new Promise((r) => setTimeout(r, 60));
  return { ok: true };
} });
export default defineWorkflow({
  name: "spin-late",
  startAt: "a0",
  nodes: {
    ${Array.from({ length: 10 }, (_, i) => `a${i}: short(),`).join("\n    ")}
    last: compute({ timeoutMs: () => spin(), run: () => ({ done: true }) }),
  },
  edges: [
    ${
  Array.from(
    { length: 10 },
    (_, i) => `{ from: "a${i}", to: "${i === 9 ? "last" : `a${i + 1}`}" },`,
  ).join("\n    ")
}
  ],
});
`;

describe("the deadline between attempts", () => {
  it("outlives many short attempts and still stops a worker that spins after them", async () => {
    const h = await newHarness({ boundaryMs: 400, killGraceMs: 200 }, { maxCrashes: 1 });
    const runId = await h.startRun(h.writeWorkflow("spin-late.workflow.ts", spinningAfterChain));
    const run = await h.waitForRun(runId, isTerminal, 40_000);
    expect([run.state, run.error?.code]).toEqual(["failed", "workerTimedOut"]);
    expect(run.error?.message).toContain("workflow code between attempts ran past 400 ms");
    const ok = queryAll<{ n: number }>(
      h.store,
      "SELECT count(*) AS n FROM node_attempts WHERE run_id = :runId AND state = 'ok'",
      { runId },
    );
    expect(ok[0].n).toBe(10);
    expect(h.invariants()).toEqual([]);
  });

  for (const where of ["presentation", "timeout"] as const) {
    it(`stops a worker spinning in ${where} code and fails the run at the crash limit`, async () => {
      // One crash-like exit is the limit here: the deadline that fires is the one between
      // attempts (a relaunched worker would meet the start-up deadline first).
      const h = await newHarness({ boundaryMs: 400, killGraceMs: 200 }, { maxCrashes: 1 });
      const runId = await h.startRun(h.writeWorkflow("spin.workflow.ts", spinning(where)));
      const run = await h.waitForRun(runId, isTerminal, 40_000);
      expect(run.state).toBe("failed");
      expect(run.error?.code).toBe("workerTimedOut");
      const epochs = queryAll<{ status: string }>(
        h.store,
        "SELECT status FROM run_workers WHERE run_id = :runId ORDER BY started_at",
        { runId },
      ).map((r) => r.status);
      expect(epochs).toEqual(["timedOut"]);
      expect(run.error?.message).toContain("workflow code between attempts ran past 400 ms");
      expect(h.invariants()).toEqual([]);
    });
  }
});

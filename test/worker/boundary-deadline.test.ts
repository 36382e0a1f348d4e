/**
 * Workflow code between attempts (routing, `timeoutMs` callbacks, `presentationPrompt`) runs under
 * a host deadline: a worker stuck there is stopped, and after the crash limit the run fails with
 * `workerTimedOut` instead of holding a slot forever.
 */
import { afterEach, describe, expect, it } from "vitest";
import { queryAll } from "../../src/state/statements.ts";
import { createHarness, type Harness, isTerminal } from "./harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

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

describe("the deadline between attempts", () => {
  for (const where of ["presentation", "timeout"] as const) {
    it(`stops a worker spinning in ${where} code and fails the run at the crash limit`, async () => {
      // One crash-like exit is the limit here: the deadline that fires is the one between
      // attempts (a relaunched worker would meet the start-up deadline first).
      h = await createHarness({ boundaryMs: 400, killGraceMs: 200 }, { maxCrashes: 1 });
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

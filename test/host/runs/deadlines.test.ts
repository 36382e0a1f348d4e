import { describe, expect, it } from "vitest";
import { queryAll } from "../../../src/state/statements.ts";
import { type Harness, isTerminal } from "../../support/supervision.ts";
import { harnessPerTest } from "../../support/harness-per-test.ts";

// A compute that spins synchronously and ignores SIGTERM: only the host can stop it.
const spin = (withRoute: boolean) => `
import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "spin",
  startAt: "spin",
  nodes: {
    spin: compute({
      timeoutMs: 400,
      run: () => {
        process.on("SIGTERM", () => {});
        for (;;) {}
      },
    }),
    ${
  withRoute
    ? `recover: compute({ run: ({ results }) => ({ recovered: results.spin.outcome }) }),`
    : ""
}
  },
  edges: [${
  withRoute
    ? `{ from: "spin", switch: { on: "$result.outcome", cases: { timed_out: "recover", ok: "recover" } } }`
    : ""
}],
});
`;

const newHarness = harnessPerTest();

function attempts(h: Harness, runId: string) {
  return queryAll<{ node_id: string; state: string; error_code: string | null }>(
    h.store,
    "SELECT node_id, state, error_code FROM node_attempts WHERE run_id = :runId ORDER BY sequence",
    { runId },
  );
}

function epochs(h: Harness, runId: string) {
  return queryAll<{ status: string }>(
    h.store,
    "SELECT status FROM run_workers WHERE run_id = :runId ORDER BY started_at",
    { runId },
  ).map((r) => r.status);
}

describe("host-enforced node deadlines", () => {
  it("kills a worker spinning past its deadline and follows the $result.outcome edge", async () => {
    const h = await newHarness();
    const runId = await h.startRun(h.writeWorkflow("spin.workflow.ts", spin(true)));
    const started = Date.now();
    const run = await h.waitForRun(runId, isTerminal, 20_000);
    expect(run.state).toBe("completed");
    expect(run.output).toEqual({ recovered: "timed_out" });
    // Deadline 400 ms + kill grace 300 ms + SIGTERM grace 300 ms, then a fresh worker.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(attempts(h, runId)).toEqual([
      { node_id: "spin", state: "timed_out", error_code: "workerTimedOut" },
      { node_id: "recover", state: "ok", error_code: null },
    ]);
    await h.waitForRun(runId, () => h!.supervision.activeWorkerCount() === 0);
    expect(epochs(h, runId)).toEqual(["timedOut", "exited"]);
    expect(h.invariants()).toEqual([]);
  });

  it("times the run out when no edge handles the timeout", async () => {
    const h = await newHarness();
    const runId = await h.startRun(h.writeWorkflow("spin.workflow.ts", spin(false)));
    const run = await h.waitForRun(runId, isTerminal, 20_000);
    expect(run.state).toBe("timed_out");
    expect(run.queueState).toBe("failed");
    expect(run.error?.code).toBe("workerTimedOut");
    expect(h.invariants()).toEqual([]);
  });
});

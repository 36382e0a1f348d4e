/**
 * Workflow code between attempts (routing, `timeoutMs` callbacks, `presentationPrompt`) runs under
 * a host deadline: a worker stuck there is stopped, and after the crash limit the run fails with
 * `workerTimedOut` instead of holding a slot forever. A deadline of its own runs from the run's
 * settlement to the worker's exit, however short the bound between attempts.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readProcStat } from "../../../src/os/proc-table.ts";
import { waitUntil } from "../../../src/os/stop-group.ts";
import { queryAll } from "../../../src/state/statements.ts";
import { isTerminal, WORKER_ENTRY } from "../../support/supervision.ts";
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

/** A worker whose goodbye is held (lingering-worker.ts), under a bound of 400 ms. */
async function lingeringHarness(extras: { leaveMs?: number; lingerMs?: number }) {
  const lingering = join(import.meta.dirname, "fixtures", "lingering-worker.ts");
  const h = await newHarness({ boundaryMs: 400, killGraceMs: 200 }, {
    ...(extras.leaveMs !== undefined ? { leaveMs: extras.leaveMs } : {}),
    ...(extras.lingerMs !== undefined
      ? { childEnv: { PIW_TEST_LINGER_MS: String(extras.lingerMs) } }
      : {}),
    workerCommand: ([, ...rest]) => ({
      command: process.execPath,
      args: [rest.length === 0 ? lingering : WORKER_ENTRY, ...rest],
    }),
  });
  const runId = await h.startRun(h.writeWorkflow(
    "done.workflow.ts",
    `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "done",
  startAt: "only",
  nodes: { only: compute({ run: () => ({ done: true }) }) },
  edges: [],
});
`,
  ));
  const epoch = () =>
    queryAll<{ pid: number; status: string; signal: string | null }>(
      h.store,
      "SELECT pid, status, signal FROM run_workers WHERE run_id = :runId",
      { runId },
    );
  return { h, runId, epoch };
}

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

  it("stops a worker still there after its run settled (it never says goodbye)", async () => {
    const { h, runId, epoch } = await lingeringHarness({ leaveMs: 400 });
    const run = await h.waitForRun(runId, isTerminal);
    expect(run.state).toBe("completed");
    // Its event loop spins: SIGTERM is never handled, so the group's SIGKILL ends it.
    expect(await waitUntil(() => epoch()[0].status !== "live", 15_000)).toBe(true);
    expect(epoch()).toEqual([{ pid: epoch()[0].pid, status: "exited", signal: "SIGKILL" }]);
    expect(readProcStat(epoch()[0].pid)).toBeNull();
    expect(h.logs.some((line) => line.startsWith("worker.leave_deadline"))).toBe(true);
    expect(h.invariants()).toEqual([]);
  });

  it("gives a settled worker's slow cleanup its own leave deadline, not the short bound", async () => {
    // Its goodbye comes 1.5 s after the settlement, past boundaryMs (400) but within the leave
    // deadline (its default): it exits on its own.
    const { h, runId, epoch } = await lingeringHarness({ lingerMs: 1_500 });
    expect((await h.waitForRun(runId, isTerminal)).state).toBe("completed");
    expect(await waitUntil(() => epoch()[0].status !== "live", 15_000)).toBe(true);
    expect(epoch()).toEqual([{ pid: epoch()[0].pid, status: "exited", signal: null }]);
    expect(readProcStat(epoch()[0].pid)).toBeNull();
    expect(h.logs.some((line) => line.startsWith("worker.leave_deadline"))).toBe(false);
    expect(h.invariants()).toEqual([]);
  });
});

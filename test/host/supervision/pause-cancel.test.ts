import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitUntil } from "../../../src/os/stop-group.ts";
import { ClaimLostError } from "../../../src/state/errors.ts";
import { queryAll } from "../../../src/state/statements.ts";
import { cancelRun, pauseRun, resumeRun } from "../../../src/state/transitions/run-commands.ts";
import { type Harness, isTerminal } from "../../support/supervision.ts";
import { harnessPerTest } from "../../support/harness-per-test.ts";

/**
 * `slow` appends a line to a side-channel file each time it starts, then waits `waitMs` (or
 * returns at once from the second execution on when `onceSlow`).
 */
const slowWorkflow = (marker: string, waitMs: number) => `
import { appendFileSync, readFileSync } from "node:fs";
import { compute, defineWorkflow } from "pi-workflows";
const runs = () => readFileSync(${
  JSON.stringify(marker)
}, "utf8").split("\\n").filter(Boolean).length;
export default defineWorkflow({
  name: "slow",
  startAt: "slow",
  nodes: {
    slow: compute({
      run: async ({ signal }) => {
        appendFileSync(${JSON.stringify(marker)}, "start\\n");
        if (runs() === 1) await new Promise((resolve) => setTimeout(resolve, ${waitMs}));
        return { executions: runs() };
      },
    }),
  },
  edges: [],
});
`;

const newHarness = harnessPerTest();

function lines(path: string): number {
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean).length : 0;
}

function epochs(h: Harness, runId: string): string[] {
  return queryAll<{ status: string }>(
    h.store,
    "SELECT status FROM run_workers WHERE run_id = :runId ORDER BY started_at",
    { runId },
  ).map((r) => r.status);
}

/**
 * The slow node runs and its start is committed. A pure compute node may run before its
 * `node.started` verdict arrives (docs/workers.md, pipelining), so the marker alone does not
 * mean the attempt row exists: a command committed in between finds no attempt to end.
 */
function started(h: Harness, runId: string, marker: string): boolean {
  return lines(marker) === 1 && attemptStates(h, runId).length === 1;
}

function attemptStates(h: Harness, runId: string): string[] {
  return queryAll<{ state: string }>(
    h.store,
    "SELECT state FROM node_attempts WHERE run_id = :runId ORDER BY sequence",
    { runId },
  ).map((r) => r.state);
}

describe("pause, resume and cancel against a live worker", () => {
  it("pause commits first, stops the group; resume runs the uncommitted pure node again", async () => {
    const h = await newHarness();
    const marker = join(h.root, "slow.log");
    const runId = await h.startRun(
      h.writeWorkflow("slow.workflow.ts", slowWorkflow(marker, 60_000)),
    );
    expect(await waitUntil(() => started(h!, runId, marker), 15_000)).toBe(true);

    const paused = pauseRun(h.store, { runId, claim: h.supervision.claimOf(runId) });
    expect(paused.stopWorker).toBe(true);
    await h.supervision.stopRun(runId, "paused");
    expect(h.supervision.activeWorkerCount()).toBe(0);
    let run = h.run(runId);
    expect([run.state, run.queueState, run.paused]).toEqual(["running", "parked", true]);
    expect(attemptStates(h, runId)).toEqual(["interrupted"]);
    expect(epochs(h, runId)).toEqual(["cancelled"]);
    expect(h.invariants()).toEqual([]);

    resumeRun(h.store, { runId });
    h.supervision.wake();
    run = await h.waitForRun(runId, isTerminal);
    expect(run.state).toBe("completed");
    expect(run.output).toEqual({ executions: 2 });
    expect(attemptStates(h, runId)).toEqual(["interrupted", "ok"]);
    expect(h.invariants()).toEqual([]);
  });

  it("cancel against a live worker ends the run cancelled and stops its group", async () => {
    const h = await newHarness();
    const marker = join(h.root, "slow.log");
    const runId = await h.startRun(
      h.writeWorkflow("slow.workflow.ts", slowWorkflow(marker, 60_000)),
    );
    expect(await waitUntil(() => started(h!, runId, marker), 15_000)).toBe(true);
    cancelRun(h.store, { runId, claim: h.supervision.claimOf(runId) });
    await h.supervision.stopRun(runId, "cancelled");
    const run = h.run(runId);
    expect([run.state, run.queueState]).toEqual(["cancelled", "cancelled"]);
    expect(attemptStates(h, runId)).toEqual(["cancelled"]);
    expect(epochs(h, runId)).toEqual(["cancelled"]);
    expect(h.invariants()).toEqual([]);
  });

  it("a worker whose claim was released gets claimLost, writes nothing and exits", async () => {
    const h = await newHarness();
    const marker = join(h.root, "slow.log");
    const runId = await h.startRun(h.writeWorkflow("slow.workflow.ts", slowWorkflow(marker, 700)));
    expect(await waitUntil(() => started(h!, runId, marker), 15_000)).toBe(true);
    // The command commits, but nobody stops the worker: its next proposal meets the fence.
    pauseRun(h.store, { runId, claim: h.supervision.claimOf(runId) });
    expect(await waitUntil(() => h!.supervision.activeWorkerCount() === 0, 15_000)).toBe(true);
    const run = h.run(runId);
    expect([run.state, run.queueState, run.paused]).toEqual(["running", "parked", true]);
    expect(attemptStates(h, runId)).toEqual(["interrupted"]);
    expect(epochs(h, runId)).toEqual(["claimLost"]);
    const events = queryAll<{ type: string }>(
      h.store,
      "SELECT type FROM events WHERE run_id = :runId ORDER BY seq",
      { runId },
    ).map((e) => e.type);
    expect(events).not.toContain("node.finished");
    expect(events.some((t) => t.includes("failed"))).toBe(false);
    expect(h.invariants()).toEqual([]);
  });

  it("a live claim cannot be force-cancelled by another owner through the stale path", async () => {
    const h = await newHarness();
    const marker = join(h.root, "slow.log");
    const runId = await h.startRun(h.writeWorkflow("slow.workflow.ts", slowWorkflow(marker, 800)));
    expect(await waitUntil(() => started(h!, runId, marker), 15_000)).toBe(true);
    expect(() => cancelRun(h!.store, { runId, claim: null })).toThrow(
      ClaimLostError,
    );
    const run = await h.waitForRun(runId, isTerminal);
    expect([run.state, run.output]).toEqual(["completed", { executions: 1 }]);
    expect(h.invariants()).toEqual([]);
  });
});

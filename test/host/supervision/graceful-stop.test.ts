/**
 * A planned stop does not create ambiguity when it can avoid it: the host waits (bounded) for an
 * in-flight external node to reach its boundary, then parks the run there, so the action is
 * neither interrupted nor repeated. Past the bound it parks as before (blocked for review).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitUntil } from "../../../src/os/stop-group.ts";
import { queryAll } from "../../../src/state/statements.ts";
import type { Harness } from "../../support/supervision.ts";
import { harnessPerTest } from "../../support/harness-per-test.ts";

const newHarness = harnessPerTest();

const workflow = (marker: string, waitMs: number) => `
import { appendFileSync } from "node:fs";
import { action, compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "deploy",
  startAt: "deploy",
  nodes: {
    deploy: action({
      run: async () => {
        appendFileSync(${JSON.stringify(marker)}, "deploy\\n");
        await new Promise((resolve) => setTimeout(resolve, ${waitMs}));
        return { deployed: true };
      },
    }),
    report: compute({ run: ({ outputs }) => outputs.deploy }),
  },
  edges: [{ from: "deploy", to: "report" }],
});
`;

const lines = (path: string) =>
  existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean).length : 0;

function attempts(h: Harness, runId: string): string[] {
  return queryAll<{ node_id: string; state: string }>(
    h.store,
    "SELECT node_id, state FROM node_attempts WHERE run_id = :runId ORDER BY sequence",
    { runId },
  ).map((r) => `${r.node_id}:${r.state}`);
}

describe("graceful stop", () => {
  it("waits for an in-flight external node, then parks at the boundary after it", async () => {
    const h = await newHarness({ stopWaitMs: 15_000 });
    const marker = join(h.root, "deploys.log");
    const runId = await h.startRun(h.writeWorkflow("deploy.workflow.ts", workflow(marker, 1_500)));
    expect(await waitUntil(() => lines(marker) === 1, 15_000)).toBe(true);
    await h.supervision.shutdown();
    const run = h.run(runId);
    expect([run.state, run.queueState, run.blockedReason]).toEqual(["running", "parked", null]);
    expect(attempts(h, runId)).toEqual(["deploy:ok"]);
    expect(lines(marker)).toBe(1);
    expect(h.invariants()).toEqual([]);
  });

  it("parks as ambiguous once the wait runs out", async () => {
    const h = await newHarness({ stopWaitMs: 300 });
    const marker = join(h.root, "deploys.log");
    const runId = await h.startRun(h.writeWorkflow("deploy.workflow.ts", workflow(marker, 60_000)));
    expect(await waitUntil(() => lines(marker) === 1, 15_000)).toBe(true);
    const started = Date.now();
    await h.supervision.shutdown();
    expect(Date.now() - started).toBeLessThan(10_000);
    const run = h.run(runId);
    expect([run.state, run.queueState, run.blockedReason]).toEqual([
      "running",
      "parked",
      "effectAmbiguous",
    ]);
    expect(attempts(h, runId)).toEqual(["deploy:interrupted"]);
    expect(h.invariants()).toEqual([]);
  });
});

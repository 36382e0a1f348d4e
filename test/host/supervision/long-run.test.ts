/**
 * A 10,000-step run through the real supervision and real worker processes, interrupted by a
 * pause and resumed: the relaunched worker receives all 10,000 committed attempts (several
 * megabytes of facts, in bounded pieces) and finishes the run. `run.status` then answers within
 * one message and pages through every attempt. The test's store commits with synchronous=OFF so
 * the run takes seconds, not minutes; the protocol and the processes are the real ones.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitUntil } from "../../../src/os/stop-group.ts";
import { encodeResponseFrame } from "../../../src/host/response-frame.ts";
import { runStatusQuery } from "../../../src/host/run-queries.ts";
import type { HostRuntime } from "../../../src/host/host-runtime.ts";
import { parseHostRequest } from "../../../src/protocol/host-request.ts";
import { MAX_FRAME_BYTES } from "../../../src/protocol/framing.ts";
import { pauseRun, resumeRun } from "../../../src/state/transitions/run-commands.ts";
import { listAttemptsPage } from "../../../src/state/attempt-queries.ts";
import type { Harness } from "../../support/supervision.ts";
import { harnessPerTest } from "../../support/harness-per-test.ts";

const STEPS = 10_000;

const newHarness = harnessPerTest();

const longWorkflow = (gate: string) => `
import { existsSync } from "node:fs";
import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "long",
  maxSteps: ${STEPS + 10},
  startAt: "step",
  nodes: {
    step: compute({ run: ({ outputs }) => {
      const i = (outputs.step?.i ?? 0) + 1;
      return { i, more: i < ${STEPS}, pad: "p".repeat(200) };
    } }),
    gate: compute({ run: async () => {
      const deadline = Date.now() + 60_000;
      while (!existsSync(${JSON.stringify(gate)}) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      return { opened: existsSync(${JSON.stringify(gate)}) };
    } }),
  },
  edges: [{ from: "step", switch: { on: "$.more", cases: { true: "step", false: "gate" } } }],
});
`;

function statusAnswer(h: Harness, runId: string, payload: Record<string, unknown>) {
  const parsed = parseHostRequest({
    schema: "pi-workflows.host-request.v1",
    requestId: `r-${Math.random()}`,
    clientId: "test",
    operation: "run.status",
    runId,
    payload,
  });
  if (!parsed.ok) throw new Error(parsed.error);
  const rt = { store: h.store, epoch: h.ctx.hostEpoch } as unknown as HostRuntime;
  const response = runStatusQuery(rt, parsed.request);
  // Every answer crosses the socket in one frame.
  expect(encodeResponseFrame(response).length).toBeLessThanOrEqual(MAX_FRAME_BYTES + 1);
  return response.receipt as { attempts: { sequence: number }[]; attemptCount: number };
}

describe("a 10,000-step run", () => {
  it("is paused near its end, resumed with all its facts, finished and inspected", async () => {
    const h = await newHarness({ workerStartupMs: 60_000 });
    h.store.db.exec("PRAGMA synchronous = OFF");
    const gate = join(h.root, "gate");
    const runId = await h.startRun(h.writeWorkflow("long.workflow.ts", longWorkflow(gate)));
    // The newest attempt only: the test polls on the host's own event loop.
    const gateRunning = () => {
      const [newest] = listAttemptsPage(h!.store, runId, { limit: 1 });
      return newest?.nodeId === "gate" && newest.state === "running";
    };
    expect(await waitUntil(gateRunning, 180_000), h.workerLogs()).toBe(true);

    pauseRun(h.store, { runId, claim: h.supervision.claimOf(runId) });
    await h.supervision.stopRun(runId, "paused");
    resumeRun(h.store, { runId });
    h.supervision.wake();
    // At the gate again: the new worker routed from 10,000 committed step attempts.
    expect(await waitUntil(gateRunning, 60_000), h.workerLogs()).toBe(true);
    writeFileSync(gate, "open");
    const run = await h.waitForRun(runId, (r) => r.state !== "running", 60_000);
    expect([run.state, run.output]).toEqual(["completed", { opened: true }]);
    expect(existsSync(gate)).toBe(true);
    expect(h.invariants()).toEqual([]);

    const count = STEPS + 2; // the steps, the gate interrupted by the pause, the gate again
    const last = statusAnswer(h, runId, {});
    expect(last.attemptCount).toBe(count);
    expect(last.attempts.map((a) => a.sequence)).toEqual(
      Array.from({ length: 100 }, (_, i) => count - 99 + i),
    );
    const seen: number[] = [];
    for (let after = 0; seen.length < count;) {
      const page = statusAnswer(h, runId, { attemptLimit: 1000, attemptsAfter: after });
      expect(page.attempts.length).toBeGreaterThan(0);
      seen.push(...page.attempts.map((a) => a.sequence));
      after = seen.at(-1)!;
    }
    expect(seen).toEqual(Array.from({ length: count }, (_, i) => i + 1));
  }, 300_000);
});

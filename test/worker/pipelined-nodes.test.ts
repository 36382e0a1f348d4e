/**
 * Pipelined pure nodes: a compute node runs before its `node.started` verdict, within a bounded
 * window of unacknowledged messages; messages still commit in order; an external node starts
 * only once every earlier message is acknowledged and its own start is durable; a pause drops
 * the uncommitted pure work (it repeats on resume), and so does a SIGKILL inside the window.
 * The host's COMMIT is slowed here (a slow disk), so the worker is always ahead of it.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitUntil } from "../../src/os/stop-group.ts";
import { queryAll } from "../../src/state/statements.ts";
import { pauseRun, resumeRun } from "../../src/state/transitions/run-commands.ts";
import { AHEAD_WINDOW } from "../../src/worker/node-runner.ts";
import { type Harness, isTerminal } from "../support/supervision.ts";
import { harnessPerTest } from "../support/harness-per-test.ts";

const chainWorkflow = (count: number, tail: boolean) => `
import { appendFileSync } from "node:fs";
import { compute, defineWorkflow, shell } from "pi-workflows";
const ran = (input, id) => appendFileSync(input.side, id + "\\n");
export default defineWorkflow({
  name: "chain",
  maxSteps: ${count + 10},
  startAt: "p0",
  nodes: {
${
  Array.from(
    { length: count },
    (_, i) =>
      `    p${i}: compute({ run: ({ input }) => { ran(input, "p${i}"); return { n: ${i} }; } }),`,
  ).join("\n")
}
${
  tail
    ? `    x: shell({ timeoutMs: 10_000, exec: () => ({ command: "true", args: [] }) }),
    y: compute({ run: ({ input, outputs }) => { ran(input, "y"); return { last: outputs.p${
      count - 1
    }.n }; } }),`
    : ""
}
  },
  edges: [
${Array.from({ length: count - 1 }, (_, i) => `    { from: "p${i}", to: "p${i + 1}" },`).join("\n")}
${tail ? `    { from: "p${count - 1}", to: "x" },\n    { from: "x", to: "y" },` : ""}
  ],
});
`;

/** A slow fsync: each COMMIT holds the host for `ms` (the worker keeps running meanwhile). */
function slowCommits(h: Harness, ms: number): void {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  const previous = h.store.beforeStatement;
  h.store.beforeStatement = (sql) => {
    previous?.(sql);
    if (sql === "COMMIT") Atomics.wait(cell, 0, 0, ms);
  };
}

/** After every COMMIT, the highest event sequence of `runId`: where commits cut its events. */
function commitCuts(h: Harness): Map<string, number[]> {
  const cuts = new Map<string, number[]>();
  const previous = h.store.afterCommit;
  h.store.afterCommit = () => {
    previous?.();
    for (
      const row of queryAll<{ run_id: string; seq: number }>(
        h.store,
        "SELECT run_id, MAX(seq) AS seq FROM events GROUP BY run_id",
      )
    ) {
      const list = cuts.get(row.run_id) ?? [];
      if (list.at(-1) !== row.seq) list.push(row.seq);
      cuts.set(row.run_id, list);
    }
  };
  return cuts;
}

function events(h: Harness, runId: string): Array<{ seq: number; type: string; node: string }> {
  return queryAll<{ seq: number; type: string; payload_json: string }>(
    h.store,
    "SELECT seq, type, payload_json FROM events WHERE run_id = :runId ORDER BY seq",
    { runId },
  ).map((e) => ({ seq: e.seq, type: e.type, node: JSON.parse(e.payload_json).nodeId ?? "" }));
}

function attempts(h: Harness, runId: string): Array<{ node: string; state: string }> {
  return queryAll<{ node_id: string; state: string }>(
    h.store,
    "SELECT node_id, state FROM node_attempts WHERE run_id = :runId ORDER BY sequence",
    { runId },
  ).map((a) => ({ node: a.node_id, state: a.state }));
}

function executions(side: string): string[] {
  return existsSync(side) ? readFileSync(side, "utf8").split("\n").filter(Boolean) : [];
}

/** Every node ran at least once per committed outcome; repeats only where pure work dropped. */
function oneOutcomeEach(h: Harness, runId: string, nodes: string[]): void {
  const rows = attempts(h, runId);
  for (const node of nodes) {
    const outcomes = rows.filter((r) => r.node === node && r.state === "ok");
    expect(outcomes.length, node).toBe(1);
  }
}

const newHarness = harnessPerTest();

describe("pipelined pure nodes", () => {
  it("compute nodes run ahead within the window; an external start waits for all before it", async () => {
    const h = await newHarness();
    const side = join(h.root, "side.log");
    const count = 80;
    const path = h.writeWorkflow("chain.workflow.ts", chainWorkflow(count, true));
    slowCommits(h, 4);
    const cuts = commitCuts(h);
    const runId = await h.startRun(path, { side });
    const run = await h.waitForRun(runId, isTerminal, 60_000);
    expect([run.state, run.output]).toEqual(["completed", { last: count - 1 }]);
    const list = events(h, runId);
    const ends = cuts.get(runId)!;
    // Node messages per commit: several nodes per commit means the worker ran nodes whose
    // start was not acknowledged yet; never more than its window (+ the start that waits).
    const perCommit: number[] = [];
    let from = 0;
    for (const end of ends) {
      perCommit.push(
        list.filter((e) => e.seq > from && e.seq <= end && e.type.startsWith("node.")).length,
      );
      from = end;
    }
    expect(Math.max(...perCommit)).toBeGreaterThan(2);
    expect(Math.max(...perCommit)).toBeLessThanOrEqual(AHEAD_WINDOW + 2);
    expect(ends.length).toBeLessThan(count);
    // The shell node: every earlier message committed before its start was even sent, and its
    // start committed alone before its command ran.
    const started = list.find((e) => e.type === "node.started" && e.node === "x")!;
    expect(ends).toContain(started.seq - 1);
    expect(ends).toContain(started.seq);
    // Messages commit in order: the events are the node sequence, start then close.
    const nodeEvents = list.filter((e) => e.type === "node.started" || e.type === "node.finished");
    const order = [...Array.from({ length: count }, (_, i) => `p${i}`), "x", "y"];
    expect(nodeEvents.map((e) => `${e.type}:${e.node}`)).toEqual(
      order.flatMap((n) => [`node.started:${n}`, `node.finished:${n}`]),
    );
    expect(executions(side).length).toBe(count + 1);
    expect(h.invariants()).toEqual([]);
  });

  it("a pause drops the uncommitted pure work; resume repeats it and each node commits once", async () => {
    const h = await newHarness();
    const side = join(h.root, "side.log");
    const count = 400;
    const path = h.writeWorkflow("chain.workflow.ts", chainWorkflow(count, false));
    slowCommits(h, 4);
    const runId = await h.startRun(path, { side });
    expect(await waitUntil(() => attempts(h!, runId).length >= 40, 30_000)).toBe(true);
    pauseRun(h.store, { runId, claim: h.supervision.claimOf(runId) });
    await h.supervision.stopRun(runId, "paused");
    const atPause = attempts(h, runId);
    const ran = executions(side);
    // The worker was ahead of the commits: it ran nodes whose start never committed.
    expect(ran.length).toBeGreaterThan(atPause.length);
    // Committed in order: nodes p0.. ok, then at most the open one, interrupted by the pause.
    const committed = atPause.filter((a) => a.state === "ok").length;
    expect(atPause.slice(0, committed).every((a) => a.state === "ok")).toBe(true);
    expect(atPause.slice(committed).map((a) => a.state)).toEqual(
      atPause.length > committed ? ["interrupted"] : [],
    );
    expect(h.invariants()).toEqual([]);

    resumeRun(h.store, { runId });
    h.supervision.wake();
    const run = await h.waitForRun(runId, isTerminal, 90_000);
    expect([run.state, run.output]).toEqual(["completed", { n: count - 1 }]);
    oneOutcomeEach(h, runId, Array.from({ length: count }, (_, i) => `p${i}`));
    // Only nodes past the last committed one ran twice.
    const firstDropped = committed;
    const counts = new Map<string, number>();
    for (const node of executions(side)) counts.set(node, (counts.get(node) ?? 0) + 1);
    for (const [node, n] of counts) {
      if (n > 1) expect(Number(node.slice(1)), node).toBeGreaterThanOrEqual(firstDropped);
    }
    expect(h.invariants()).toEqual([]);
  });

  it("a worker SIGKILLed inside the window: the run resumes from what committed", async () => {
    // The run's workers only (not the resolver); once: the next epoch runs through.
    const crash = (runId: string | null): NodeJS.ProcessEnv =>
      runId
        ? {
          PI_WORKFLOWS_CRASH_AT: "worker.node.finished.afterSend#30",
          PI_WORKFLOWS_CRASH_ONCE: join(h!.root, "crashed"),
        }
        : {};
    const h = await newHarness({}, { childEnv: crash });
    const marker = join(h.root, "crashed");
    const side = join(h.root, "side.log");
    const count = 60;
    const path = h.writeWorkflow("chain.workflow.ts", chainWorkflow(count, false));
    slowCommits(h, 4);
    const runId = await h.startRun(path, { side });
    const run = await h.waitForRun(runId, isTerminal, 60_000);
    expect(existsSync(marker)).toBe(true);
    expect([run.state, run.output]).toEqual(["completed", { n: count - 1 }]);
    oneOutcomeEach(h, runId, Array.from({ length: count }, (_, i) => `p${i}`));
    expect(attempts(h, runId).filter((a) => a.state === "interrupted").length).toBeLessThanOrEqual(
      1,
    );
    expect(h.invariants()).toEqual([]);
  });

  it("a window of large messages waits for the slow reader without piling up listeners", async () => {
    const h = await newHarness();
    const count = 40;
    // ~100 KB per close: the window is far more than the pipe buffer while commits are slow.
    const source = `
import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "big",
  maxSteps: ${count + 5},
  startAt: "b0",
  nodes: {
${
      Array.from({ length: count }, (_, i) =>
        `    b${i}: compute({ run: () => ({ text: "${i}".repeat(100_000) }) }),`)
        .join("\n")
    }
  },
  edges: [
${Array.from({ length: count - 1 }, (_, i) => `    { from: "b${i}", to: "b${i + 1}" },`).join("\n")}
  ],
});
`;
    slowCommits(h, 4);
    const runId = await h.startRun(h.writeWorkflow("big.workflow.ts", source), {});
    const run = await h.waitForRun(runId, isTerminal, 60_000);
    expect(run.state).toBe("completed");
    expect(attempts(h, runId).filter((a) => a.state === "ok").length).toBe(count);
    expect(h.workerLogs()).not.toMatch(/MaxListenersExceeded|Warning/);
    expect(h.invariants()).toEqual([]);
  });
});

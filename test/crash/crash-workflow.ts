/**
 * The multi-node workflow every crash test runs, and the checks applied after recovery.
 *
 *   one (compute) -> two (action, two updates) -> three (compute, always throws)
 *     -> $result.outcome failed|ok -> four (compute) -> run completed
 *
 * Every callback appends its node id to a side-channel file, so a test can count executions.
 * It passes through every live message kind: worker.ready, node.started x4, node.update x2,
 * node.finished x3, node.failed x1, run.finished, worker.exiting.
 */
import { existsSync, readFileSync } from "node:fs";
import type { StateStore } from "../../src/state/store.ts";
import { queryAll } from "../../src/state/statements.ts";

/** The side-channel file comes from the run input (`{side: path}`), so one file serves all runs. */
export const CRASH_WORKFLOW_SOURCE = `
import { appendFileSync } from "node:fs";
import { action, compute, defineWorkflow } from "pi-workflows";
const ran = (input, id) => appendFileSync(input.side, id + "\\n");
export default defineWorkflow({
  name: "crashy",
  startAt: "one",
  nodes: {
    one: compute({ run: ({ input }) => { ran(input, "one"); return { n: 1 }; } }),
    two: action({
      run: ({ input, publishUpdate }) => {
        ran(input, "two");
        publishUpdate({ type: "note", key: "first", data: { text: "start" } });
        publishUpdate({ type: "note", key: "two", data: { text: "half" } });
        return { n: 2 };
      },
    }),
    three: compute({ run: ({ input }) => { ran(input, "three"); throw new Error("three always fails"); } }),
    four: compute({
      run: ({ input, outputs }) => { ran(input, "four"); return { total: outputs.one.n + outputs.two.n }; },
    }),
  },
  edges: [
    { from: "one", to: "two" },
    { from: "two", to: "three" },
    { from: "three", switch: { on: "$result.outcome", cases: { failed: "four", ok: "four" } } },
  ],
});
`;

export const EXTERNAL_NODES = new Set(["two"]);

/** How many times each node's callback ran. */
export function executions(sideChannel: string): Map<string, number> {
  const counts = new Map<string, number>();
  if (!existsSync(sideChannel)) return counts;
  for (const line of readFileSync(sideChannel, "utf8").split("\n").filter(Boolean)) {
    counts.set(line, (counts.get(line) ?? 0) + 1);
  }
  return counts;
}

/**
 * The retry-safety rule after recovery: at most one committed outcome per node; a node ran more
 * than once only when its earlier attempts were interrupted before their outcome committed, or
 * (a pure compute node, which may run before its start is durable: see the worker's
 * node-runner.ts) when an earlier execution's start never committed; external nodes never ran
 * twice and never without an attempt. Returns the violations (empty when the rule holds).
 */
export function retryViolations(store: StateStore, runId: string, sideChannel: string): string[] {
  const rows = queryAll<{ node_id: string; state: string }>(
    store,
    "SELECT node_id, state FROM node_attempts WHERE run_id = :runId",
    { runId },
  );
  const problems: string[] = [];
  for (const [node, count] of executions(sideChannel)) {
    const external = EXTERNAL_NODES.has(node);
    const attempts = rows.filter((r) => r.node_id === node);
    const committed = attempts.filter((r) => r.state === "ok" || r.state === "failed").length;
    const interrupted = attempts.filter((r) => r.state === "interrupted").length;
    // Executions whose `node.started` never committed (dropped pure work).
    const unstarted = Math.max(0, count - attempts.length);
    if (external && unstarted > 0) {
      problems.push(`${node} ran ${count}x for ${attempts.length} attempts`);
    }
    if (committed > 1) problems.push(`${node} has ${committed} committed outcomes`);
    if (count - 1 > interrupted + unstarted) problems.push(`${node} repeated without interruption`);
    if (external && count > 1) problems.push(`external ${node} ran ${count}x`);
  }
  return problems;
}

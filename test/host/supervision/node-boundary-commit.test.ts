/**
 * One commit per node boundary: a pure node's close (`node.finished` / `node.failed`) and the
 * next pure node's `node.started` are sent in one write and committed in one group commit; an
 * external node's start is never paired (it waits for its own durable start and every earlier
 * acknowledgement).
 */
import { describe, expect, it } from "vitest";
import { queryAll, queryOneArgs } from "../../../src/state/statements.ts";
import { isTerminal } from "../../support/supervision.ts";
import { harnessPerTest } from "../../support/harness-per-test.ts";

const CHAIN = 12;
const WORKFLOW = `
import { action, compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "boundaries",
  startAt: "p0",
  nodes: {
${
  Array.from({ length: CHAIN }, (_, i) => `    p${i}: compute({ run: () => ({ n: ${i} }) }),`)
    .join("\n")
}
    c: compute({ run: () => { throw new Error("c fails"); } }),
    d: action({ run: ({ outputs }) => ({ n: outputs.p${CHAIN - 1}.n + 1 }) }),
    e: compute({ run: ({ outputs }) => ({ total: outputs.d.n }) }),
  },
  edges: [
${
  Array.from({ length: CHAIN - 1 }, (_, i) => `    { from: "p${i}", to: "p${i + 1}" },`)
    .join("\n")
}
    { from: "p${CHAIN - 1}", to: "c" },
    { from: "c", switch: { on: "$result.outcome", cases: { failed: "d", ok: "d" } } },
    { from: "d", to: "e" },
  ],
});
`;

const newHarness = harnessPerTest();

describe("node boundaries", () => {
  it("a pure close and the next pure start share one commit; an external start does not", async () => {
    const h = await newHarness();
    const store = h.store;
    const path = h.writeWorkflow("boundaries.workflow.ts", WORKFLOW);
    // After every COMMIT: the highest event sequence of each run, i.e. where commits cut.
    const cuts = new Map<string, Set<number>>();
    const previous = store.afterCommit;
    store.afterCommit = () => {
      previous?.();
      for (
        const row of queryAll<{ run_id: string; seq: number }>(
          store,
          "SELECT run_id, MAX(seq) AS seq FROM events GROUP BY run_id",
        )
      ) {
        if (!cuts.has(row.run_id)) cuts.set(row.run_id, new Set());
        cuts.get(row.run_id)!.add(row.seq);
      }
    };
    const runId = await h.startRun(path, {});
    const run = await h.waitForRun(runId, isTerminal);
    store.afterCommit = previous;
    expect([run.state, run.output]).toEqual(["completed", { total: CHAIN }]);
    const events = queryAll<{ seq: number; type: string; payload_json: string }>(
      store,
      "SELECT seq, type, payload_json FROM events WHERE run_id = :runId ORDER BY seq",
      { runId },
    );
    const commitEnds = cuts.get(runId)!;
    const nodeOf = (seq: number) => JSON.parse(events[seq - 1].payload_json).nodeId as string;
    // For each node.started: was the event before it (the previous node's close) cut off by a
    // commit of its own?
    const startedAlone = new Map(
      events.filter((e) => e.type === "node.started").map((e) => [
        nodeOf(e.seq),
        commitEnds.has(e.seq - 1),
      ]),
    );
    expect(startedAlone.get("p0")).toBe(true); // after worker.ready
    // External: its start waits for c's node.failed to be acknowledged; and an external node's
    // close is never sent ahead, so e starts alone too. Both are certain.
    expect(startedAlone.get("d")).toBe(true);
    expect(startedAlone.get("e")).toBe(true);
    // A pure close and the next pure start share a commit unless the start arrived after the
    // host's short linger (possible on a loaded machine): most of them must.
    const pure = [...Array.from({ length: CHAIN - 1 }, (_, i) => `p${i + 1}`), "c"];
    const shared = pure.filter((node) => startedAlone.get(node) === false);
    expect(shared.length, `shared: ${shared.join(",")}`).toBeGreaterThanOrEqual(pure.length / 2);
    const closes = events.filter((e) => e.type === "node.finished" || e.type === "node.failed");
    expect(closes.map((e) => e.type)).toEqual([
      ...Array.from({ length: CHAIN }, () => "node.finished"),
      "node.failed",
      "node.finished",
      "node.finished",
    ]);
    const attempts = queryOneArgs<{ n: number }>(
      store,
      "SELECT COUNT(*) AS n FROM node_attempts WHERE run_id = ?1",
      runId,
    );
    expect(attempts?.n).toBe(CHAIN + 3);
    expect(h.invariants()).toEqual([]);
  });
});

/**
 * The worker's own copy of the run facts only grows by appended attempts, so its view is extended
 * step by step instead of rebuilt (a run of n steps costs O(n), not O(n²)). The extended view
 * must always equal a view built from scratch, and anything other than an in-order append must
 * fall back to a full build.
 */
import { describe, expect, it } from "vitest";
import { compute, defineWorkflow } from "../../mod.ts";
import type { AttemptFact, RunFacts } from "../../src/protocol/run-facts.ts";
import { decideNext, trackAppendOnlyFacts } from "../../src/workflows/engine.ts";
import { viewFacts } from "../../src/workflows/facts-view.ts";
import { compileWorkflow } from "../../src/workflows/index.ts";

const wf = compileWorkflow(defineWorkflow({
  name: "loop",
  maxSteps: 100,
  startAt: "a",
  nodes: {
    a: compute({ run: () => 1 }),
    b: compute({ run: () => 2 }),
  },
  edges: [{ from: "a", to: "b" }, { from: "b", to: "a" }],
}));

let sequence = 0;
function attempt(nodeId: string, state: AttemptFact["state"], output?: number): AttemptFact {
  sequence++;
  return {
    attemptId: `att-${sequence}`,
    nodeId,
    sequence,
    nodeKind: "compute",
    effect: "pure",
    state,
    ...(output !== undefined ? { output } : {}),
    ...(state === "failed" ? { error: { code: "nodeFailed", message: "no" } } : {}),
    startedAt: sequence,
    ...(state === "running" ? {} : { finishedAt: sequence + 1 }),
    deadlineAt: null,
  };
}

function facts(attempts: AttemptFact[]): RunFacts {
  return { runId: "run-1", input: {}, attempts } as RunFacts;
}

/** The parts of a view callbacks and routing read, as plain data. */
function snapshot(f: RunFacts) {
  const view = viewFacts(wf, f);
  return {
    steps: view.steps.map((a) => a.attemptId),
    latest: [...view.latest].map(([id, a]) => [id, a.attemptId]),
    outputs: [...view.outputs],
    visits: [...view.visits],
    last: view.last?.attemptId,
    next: decideNext(wf, f),
  };
}

describe("the worker's append-only facts", () => {
  it("extends its view to exactly what a fresh build sees, append after append", () => {
    const own = trackAppendOnlyFacts(facts([attempt("a", "ok", 1)]));
    const appended = [
      attempt("b", "ok", 2),
      attempt("a", "interrupted"),
      attempt("a", "failed"), // hides a's earlier output
      attempt("a", "ok", 3),
      attempt("b", "running"),
    ];
    const first = viewFacts(wf, own);
    for (const next of appended) {
      own.attempts.push(next);
      expect(snapshot(own)).toEqual(snapshot(facts([...own.attempts])));
    }
    // Extended in place: the same view object, now with every attempt taken in.
    expect(viewFacts(wf, own)).toBe(first);
    expect(first.visits.get("a")).toBe(3);
  });

  it("rebuilds when an attempt arrives out of sequence order", () => {
    const later = attempt("a", "ok", 1);
    const earlier = { ...attempt("b", "ok", 2), sequence: 0 };
    const own = trackAppendOnlyFacts(facts([later]));
    const first = viewFacts(wf, own);
    own.attempts.push(earlier);
    const view = viewFacts(wf, own);
    expect(view).not.toBe(first);
    expect(view.last?.attemptId).toBe(later.attemptId);
    expect(snapshot(own)).toEqual(snapshot(facts([...own.attempts])));
  });

  it("leaves untracked facts alone: edited attempts are always seen", () => {
    const running = attempt("a", "running");
    const plain = facts([running]);
    expect(viewFacts(wf, plain).steps).toHaveLength(0);
    running.state = "ok";
    running.output = 7;
    expect(viewFacts(wf, plain).outputs.get("a")).toBe(7);
  });
});

/**
 * The fork transaction (`run.rerun`): which visit it reruns, what it adopts, the fit check, the
 * ambiguous-effect block, and that a refused fork writes nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkInvariants } from "../../src/state/invariants.ts";
import { listAttempts, listEvents, readRun, readRunFacts } from "../../src/state/queries.ts";
import { RefusedError } from "../../src/state/errors.ts";
import { type Claim } from "../../src/state/claims.ts";
import {
  recordNodeFailed,
  recordNodeFinished,
  recordNodeStarted,
} from "../../src/state/transitions/node-attempts.ts";
import { failRun } from "../../src/state/transitions/run-end.ts";
import { cancelRun } from "../../src/state/transitions/run-commands.ts";
import { reserveEffect, settleEffect } from "../../src/state/transitions/effects.ts";
import { forkRun, type ForkRunOptions } from "../../src/state/transitions/run-fork.ts";

import { enqueue, type Fixture, launch, openFixture, snapshot } from "../support/state-store.ts";

let fx: Fixture;
beforeEach(() => (fx = openFixture()));
afterEach(() => fx.close());

const GRAPH = {
  startAt: "plan",
  nodes: {
    plan: { kind: "compute" },
    build: { kind: "action" },
    check: { kind: "compute" },
    ship: { kind: "compute" },
  },
  edges: {
    plan: { kind: "plain" as const, to: "build" },
    build: { kind: "plain" as const, to: "check" },
    check: { kind: "switch" as const, on: "$.ok", cases: { false: "build", true: "ship" } },
  },
};

function step(claim: Claim, nodeId: string, nodeKind: string, output: unknown): string {
  const attemptId = fx.store.ids.next("attempt");
  recordNodeStarted(fx.store, claim, {
    attemptId,
    nodeId,
    nodeKind,
    effect: nodeKind === "action" ? "external" : "pure",
    deadlineAt: null,
  });
  recordNodeFinished(fx.store, claim, { attemptId, output: output as never });
  return attemptId;
}

/** plan, build, check(false), build, check(false), ship failed; the run failed. */
function failedParent(): { runId: string; claim: Claim; ids: string[] } {
  const runId = enqueue(fx.store);
  const claim = launch(fx.store, runId);
  const ids = [
    step(claim, "plan", "compute", { plan: 1 }),
    step(claim, "build", "action", { build: 1 }),
    step(claim, "check", "compute", { ok: false }),
    step(claim, "build", "action", { build: 2 }),
    step(claim, "check", "compute", { ok: true }),
  ];
  const attemptId = fx.store.ids.next("attempt");
  recordNodeStarted(fx.store, claim, {
    attemptId,
    nodeId: "ship",
    nodeKind: "compute",
    effect: "pure",
    deadlineAt: null,
  });
  const error = { code: "nodeFailed", message: "ship failed" };
  recordNodeFailed(fx.store, claim, { attemptId, outcome: "failed", error });
  failRun(fx.store, claim, { error });
  return { runId, claim, ids: [...ids, attemptId] };
}

function fork(parentRunId: string, extra: Partial<ForkRunOptions> = {}) {
  return forkRun(fx.store, {
    workflowName: "demo",
    workflowRef: "builtin:demo",
    projectPath: "/project",
    workflowSource: { root: { kind: "builtin", id: "demo" }, mounted: [] },
    definitionDigest: "sha256:def2",
    input: { task: "x" },
    inputHash: "sha256:in",
    binding: { executionMode: "headless" },
    parentRunId,
    fromNodeId: "ship",
    source: "current",
    graph: GRAPH,
    ...extra,
  });
}

describe("forkRun", () => {
  it("adopts the parent's attempts before the node and links the fork to its parent", () => {
    const parent = failedParent();
    const result = fork(parent.runId);
    expect(result.revision).toBe(2);
    expect(result.adopted.map((a) => a.attemptId)).toEqual(parent.ids.slice(0, 5));
    const run = readRun(fx.store, result.runId)!;
    expect(run.state).toBe("queued");
    expect(run.forkedFrom).toEqual({ runId: parent.runId, nodeId: "ship" });
    const attempts = listAttempts(fx.store, result.runId);
    expect(attempts.map((a) => [a.sequence, a.nodeId, a.state, a.adoptedFrom])).toEqual(
      parent.ids.slice(0, 5).map((id, i) => [i + 1, attempts[i].nodeId, "ok", id]),
    );
    // The engine sees the parent's outputs as the fork's own committed facts.
    const facts = readRunFacts(fx.store, result.runId);
    expect(facts.attempts.map((a) => a.output)).toEqual([
      { plan: 1 },
      { build: 1 },
      { ok: false },
      { build: 2 },
      { ok: true },
    ]);
    expect(listEvents(fx.store, result.runId).map((e) => e.type)).toEqual([
      "run.queued",
      "run.forked",
    ]);
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("reruns an earlier visit of a node in a loop when asked", () => {
    const parent = failedParent();
    const result = fork(parent.runId, { fromNodeId: "check", visit: 1 });
    expect(result.from.visit).toBe(1);
    expect(result.from.attemptId).toBe(parent.ids[2]);
    expect(result.adopted.map((a) => a.nodeId)).toEqual(["plan", "build"]);
    // The default is the latest visit.
    const latest = fork(parent.runId, { fromNodeId: "check" });
    expect(latest.from).toMatchObject({ attemptId: parent.ids[4], visit: 2 });
    expect(latest.adopted).toHaveLength(4);
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("refuses a node the parent never ran, or a visit it did not make, and writes nothing", () => {
    const parent = failedParent();
    const before = snapshot(fx.store);
    expect(() => fork(parent.runId, { fromNodeId: "nope" })).toThrow(/never ran node "nope"/);
    expect(() => fork(parent.runId, { fromNodeId: "build", visit: 3 })).toThrow(
      /--visit 1 to 2/,
    );
    expect(snapshot(fx.store)).toBe(before);
  });

  it("refuses a prefix that no longer fits, naming the node and an earlier --from", () => {
    const parent = failedParent();
    const before = snapshot(fx.store);
    const changed = {
      ...GRAPH,
      nodes: { ...GRAPH.nodes, check: { kind: "agent" } },
    };
    const refusal = (() => {
      try {
        fork(parent.runId, { graph: changed });
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(RefusedError);
    expect((refusal as RefusedError).code).toBe("historyDoesNotFit");
    expect((refusal as Error).message).toMatch(
      /node "check" was a compute node and is now an agent node.*--from check --visit 1\)/,
    );
    const noEdge = {
      ...GRAPH,
      edges: { ...GRAPH.edges, build: { kind: "plain" as const, to: "ship" } },
    };
    expect(() => fork(parent.runId, { graph: noEdge })).toThrow(
      /no longer an edge from "build" to "check"/,
    );
    // An earlier fork point whose prefix still fits is accepted.
    expect(fork(parent.runId, { graph: noEdge, fromNodeId: "build", visit: 1 }).adopted)
      .toHaveLength(1);
    expect(snapshot(fx.store)).not.toBe(before);
    // The recorded source needs no graph and no check.
    expect(fork(parent.runId, { source: "recorded", graph: undefined }).adopted).toHaveLength(5);
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("keeps an applied effect of the prefix and refuses while one is ambiguous", () => {
    const runId = enqueue(fx.store);
    const claim = launch(fx.store, runId);
    step(claim, "plan", "compute", { plan: 1 });
    const buildId = fx.store.ids.next("attempt");
    recordNodeStarted(fx.store, claim, {
      attemptId: buildId,
      nodeId: "build",
      nodeKind: "action",
      effect: "external",
      deadlineAt: null,
    });
    const reserved = reserveEffect(fx.store, claim, {
      attemptId: buildId,
      effectType: "deploy",
      idempotencyKey: "k1",
      requestFingerprint: "fp",
    });
    settleEffect(fx.store, claim, {
      effectId: reserved.result.effectId,
      outcome: "applied",
      effectReceipt: { id: 7 },
    });
    recordNodeFinished(fx.store, claim, { attemptId: buildId, output: { id: 7 } });
    const checkId = fx.store.ids.next("attempt");
    recordNodeStarted(fx.store, claim, {
      attemptId: checkId,
      nodeId: "check",
      nodeKind: "compute",
      effect: "pure",
      deadlineAt: null,
    });
    // Cancelled mid-node: nothing ambiguous (a pure node), the applied effect stays applied.
    cancelRun(fx.store, { runId, claim });
    const result = fork(runId, { fromNodeId: "check" });
    expect(result.adopted.map((a) => a.nodeId)).toEqual(["plan", "build"]);
    const effects = fx.store.db.prepare("SELECT state, receipt_json FROM effects").all();
    expect(effects).toEqual([{ state: "applied", receipt_json: '{"id":7}' }]);

    // A run cancelled while its action ran: the action's outcome is unknown.
    const other = enqueue(fx.store);
    const claim2 = launch(fx.store, other);
    step(claim2, "plan", "compute", { plan: 1 });
    const actionId = fx.store.ids.next("attempt");
    recordNodeStarted(fx.store, claim2, {
      attemptId: actionId,
      nodeId: "build",
      nodeKind: "action",
      effect: "external",
      deadlineAt: null,
    });
    cancelRun(fx.store, { runId: other, claim: claim2 });
    const before = snapshot(fx.store);
    expect(() => fork(other, { fromNodeId: "build" })).toThrow(
      /may have applied effect .*effect resolve/,
    );
    expect(snapshot(fx.store)).toBe(before);
    expect(checkInvariants(fx.store)).toEqual([]);
  });
});

describe("fork invariants", () => {
  it("doctor names an adopted attempt that is not a copy of its parent's", () => {
    const parent = failedParent();
    const result = fork(parent.runId);
    fx.store.db.prepare(
      "UPDATE node_attempts SET output_json = '{\"plan\":2}' WHERE run_id = ? AND sequence = 1",
    ).run(result.runId);
    expect(checkInvariants(fx.store).map((v) => v.code)).toEqual(["adoptedAttemptMismatch"]);
  });
});

/**
 * Controller records and transitions on a real state file with a fake clock: compare-and-set on
 * resourceVersion, generation only with the spec, the deduplicated queue (a request during a
 * reconcile is not lost), backoff and requeueAfter times, deletion with finalizers, effects with
 * the workflow-effect rules, child runs enqueueing their parent, recovery of expired claims, and
 * `checkInvariants` after each.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  initialResourceStatus,
  type ResourceStatus,
} from "../../src/protocol/controller-resource.ts";
import { ClaimLostError } from "../../src/state/errors.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { queryAll } from "../../src/state/statements.ts";
import {
  applyResource,
  requestDeletion,
  requestReconcile,
} from "../../src/state/controllers/resources.ts";
import {
  claimReconciles,
  listDueReconciles,
  listExpiredReconciles,
  nextReconcileDue,
  type ReconcileClaim,
  recoverExpiredReconcile,
} from "../../src/state/controllers/reconcile-claims.ts";
import {
  finishReconcile,
  interruptReconcile,
  timeOutReconcile,
} from "../../src/state/controllers/reconcile-end.ts";
import {
  reserveReconcileEffect,
  settleReconcileEffect,
} from "../../src/state/controllers/reconcile-effects.ts";
import {
  ensureChildRequest,
  readChildRef,
  startChildRun,
} from "../../src/state/controllers/child-workflows.ts";
import { readResourceDetail } from "../../src/state/controllers/controller-queries.ts";
import { readRun, readRunFacts } from "../../src/state/queries.ts";
import { ControllerRefusal } from "../../src/state/controllers/errors.ts";
import { cancelRun } from "../../src/state/transitions/run-commands.ts";
import {
  type Fixture,
  HOST,
  HOST_EPOCH,
  launch,
  openFixture,
  TTL,
} from "../support/state-store.ts";
import { acquireHostClaim, releaseHostClaim } from "../../src/state/host-claim.ts";
import { completeRun } from "../../src/state/transitions/run-end.ts";
import { readBudgetStop, readPoolSpend } from "../../src/state/budget-stop.ts";
import { forkRun } from "../../src/state/transitions/run-fork.ts";
import { resumeRun } from "../../src/state/transitions/run-commands.ts";
import { runSummary } from "../../src/host/run-summary.ts";
import { describeRunState } from "../../src/cli/run-state.ts";
import { shortRunId } from "../../src/cli/run-ids.ts";
import { readRunBudget } from "../../src/state/run-spend.ts";
import { blockOverBudget, raiseBudget } from "../../src/state/transitions/run-budget.ts";
import {
  recordNodeFinished,
  recordNodeStarted,
} from "../../src/state/transitions/node-attempts.ts";

let f: Fixture;
beforeEach(() => {
  f = openFixture();
});
afterEach(() => {
  expect(checkInvariants(f.store)).toEqual([]);
  f.close();
});

/** The resolved run of a child request for workflow "copy". */
const COPY_RUN = {
  workflowName: "copy",
  workflowRef: "/p/copy.workflow.ts",
  projectPath: "/project",
  workflowSource: { root: { kind: "builtin" as const, id: "x", revision: "1" }, mounted: [] },
  definitionDigest: "sha256:d",
  input: {},
  inputHash: "sha256:i",
};

const PIN = {
  projectPath: "/project",
  name: "sync",
  sourceRef: "/project/.pi/controllers/sync.controller.ts",
  source: { root: { kind: "file", path: "/p/sync.controller.ts", hash: "sha256:a" }, mounted: [] },
  sourceDigest: "sha256:digest-a",
  timeoutMs: 60_000,
};

function apply(key: string, spec: unknown, expected?: number) {
  return applyResource(f.store, {
    controller: PIN,
    key,
    spec: spec as never,
    initialStatus: { phase: "new" },
    expectedResourceVersion: expected,
  });
}

function claimAll(hostEpoch = HOST_EPOCH): ReconcileClaim[] {
  const due = listDueReconciles(f.store, f.clock.now(), 100);
  return claimReconciles(f.store, {
    uids: due.map((d) => d.uid),
    ownerId: HOST,
    hostEpoch,
    ttlMs: TTL,
    token: () => f.store.ids.token(),
  });
}

function statusFor(c: ReconcileClaim, controllerStatus: unknown): ResourceStatus {
  return {
    ...c.resource.status,
    observedGeneration: c.resource.metadata.generation,
    controllerStatus: controllerStatus as never,
  };
}

function settle(c: ReconcileClaim, extra: { finalizers?: string[] } = {}) {
  return finishReconcile(f.store, c.claim, {
    uid: c.uid,
    expectedResourceVersion: c.resource.metadata.resourceVersion,
    outcome: { kind: "settled", status: statusFor(c, { phase: "done" }), ...extra },
    retryDelayMs: 1000,
  });
}

describe("resources", () => {
  it("apply creates at version 1 with the initial status; the same spec changes nothing", () => {
    const first = apply("a", { n: 1 });
    expect(first.created).toBe(true);
    expect(first.resource.metadata).toMatchObject({ resourceVersion: 1, generation: 1 });
    expect(first.resource.status).toEqual(initialResourceStatus({ phase: "new" }));
    const again = apply("a", { n: 1 });
    expect([again.created, again.changed, again.resource.metadata.resourceVersion]).toEqual([
      false,
      false,
      1,
    ]);
    const changed = apply("a", { n: 2 });
    expect(changed.resource.metadata).toMatchObject({ resourceVersion: 2, generation: 2 });
  });

  it("compare-and-set on resourceVersion refuses a stale apply and changes nothing", () => {
    apply("a", { n: 1 });
    expect(() => apply("a", { n: 2 }, 5)).toThrow(ControllerRefusal);
    try {
      apply("a", { n: 2 }, 5);
    } catch (error) {
      expect((error as ControllerRefusal).outcome).toBe("conflict");
      expect((error as ControllerRefusal).revision).toBe(1);
    }
    expect(() => apply("b", { n: 1 }, 3)).toThrow(/expected 3, found 0/);
    expect(apply("a", { n: 2 }, 1).resource.metadata.generation).toBe(2);
  });

  it("a reconcile's status write conflicts when the spec changed under it, and runs again", () => {
    apply("a", { n: 1 });
    const [c] = claimAll();
    apply("a", { n: 2 });
    const end = settle(c);
    expect(end.conflict).toBe(true);
    const detail = readResourceDetail(f.store, {
      projectPath: "/project",
      name: "sync",
      key: "a",
    })!;
    expect(detail.resource.status.controllerStatus).toEqual({ phase: "new" });
    expect(detail.resource.metadata.generation).toBe(2);
    const [again] = claimAll();
    expect(again.resource.metadata.generation).toBe(2);
    expect(settle(again).conflict).toBe(false);
    const after = readResourceDetail(f.store, { projectPath: "/project", name: "sync", key: "a" })!;
    expect(after.resource.status).toMatchObject({
      observedGeneration: 2,
      controllerStatus: { phase: "done" },
    });
    expect(after.resource.metadata.generation).toBe(2);
    expect(after.queue?.pending).toBe(false);
  });

  it("a request that arrives during a reconcile is not lost", () => {
    apply("a", { n: 1 });
    const [c] = claimAll();
    expect(listDueReconciles(f.store, f.clock.now(), 10)).toEqual([]);
    requestReconcile(f.store, { projectPath: "/project", name: "sync", key: "a" });
    expect(listDueReconciles(f.store, f.clock.now(), 10)).toEqual([]); // still claimed
    expect(settle(c).conflict).toBe(false);
    expect(listDueReconciles(f.store, f.clock.now(), 10)).toHaveLength(1);
  });

  it("errors back off by the host's delay; requeueAfter waits; settled clears the count", () => {
    apply("a", { n: 1 });
    let [c] = claimAll();
    finishReconcile(f.store, c.claim, {
      uid: c.uid,
      expectedResourceVersion: 1,
      outcome: { kind: "error", error: { code: "boom", message: "it broke" } },
      retryDelayMs: 1000,
    });
    expect(nextReconcileDue(f.store)).toBe(f.clock.now() + 1000);
    expect(claimAll()).toEqual([]);
    f.clock.advance(1000);
    [c] = claimAll();
    expect(c.consecutiveErrors).toBe(1);
    finishReconcile(f.store, c.claim, {
      uid: c.uid,
      expectedResourceVersion: 1,
      outcome: { kind: "requeue", status: statusFor(c, { phase: "wait" }), afterMs: 5000 },
      retryDelayMs: 0,
    });
    expect(nextReconcileDue(f.store)).toBe(f.clock.now() + 5000);
    f.clock.advance(5000);
    [c] = claimAll();
    expect(c.consecutiveErrors).toBe(0);
    settle(c);
    expect(nextReconcileDue(f.store)).toBeNull();
  });

  it("deletion waits for the finalizers the controller set, then removes a tombstone", () => {
    apply("a", { n: 1 });
    let [c] = claimAll();
    settle(c, { finalizers: ["cleanup"] });
    const deleting = requestDeletion(f.store, { projectPath: "/project", name: "sync", key: "a" });
    expect(deleting.removed).toBe(false);
    expect(deleting.resource.metadata.deletionTimestamp).toBeDefined();
    expect(() => apply("a", { n: 9 })).toThrow(/being deleted/);
    [c] = claimAll();
    expect(c.resource.metadata.deletionTimestamp).toBeDefined();
    const end = settle(c, { finalizers: [] });
    expect(end.removed).toBe(true);
    expect(readResourceDetail(f.store, { projectPath: "/project", name: "sync", key: "a" }))
      .toBeUndefined();
    // The key can be applied again as a new resource.
    const fresh = apply("a", { n: 1 });
    expect(fresh.created).toBe(true);
    expect(fresh.resource.metadata.uid).not.toBe(c.uid);
  });

  it("a resource without finalizers is removed at once, unless a reconcile holds it", () => {
    apply("a", { n: 1 });
    apply("b", { n: 1 });
    const claims = claimAll();
    const b = claims.find((c) => c.resource.metadata.key === "b")!;
    settle(b);
    expect(requestDeletion(f.store, { projectPath: "/project", name: "sync", key: "b" }).removed)
      .toBe(true);
    const a = claims.find((c) => c.resource.metadata.key === "a")!;
    expect(requestDeletion(f.store, { projectPath: "/project", name: "sync", key: "a" }).removed)
      .toBe(false);
    // The reconcile that held it read the version before the deletion: its write conflicts,
    // and the resource is removed as its claim ends.
    expect(settle(a)).toMatchObject({ conflict: true, removed: true });
  });
});

describe("reconcile effects", () => {
  it("reserve, settle, adopt; the same key with another request is refused", () => {
    apply("a", { n: 1 });
    let [c] = claimAll();
    const reserved = reserveReconcileEffect(f.store, c.claim, {
      uid: c.uid,
      kind: "file.write",
      key: "k1",
      requestFingerprint: "sha256:r1",
      contract: "readBack",
    });
    expect(reserved.decision).toBe("apply");
    settleReconcileEffect(f.store, c.claim, {
      uid: c.uid,
      effectId: reserved.effectId,
      outcome: "applied",
      receipt: { bytes: 3 },
    });
    settle(c);
    requestReconcile(f.store, { projectPath: "/project", name: "sync", key: "a" });
    [c] = claimAll();
    expect(reserveReconcileEffect(f.store, c.claim, {
      uid: c.uid,
      kind: "file.write",
      key: "k1",
      requestFingerprint: "sha256:r1",
      contract: "readBack",
    })).toEqual({
      decision: "adopt",
      effectId: reserved.effectId,
      state: "applied",
      receipt: { bytes: 3 },
    });
    expect(() =>
      reserveReconcileEffect(f.store, c.claim, {
        uid: c.uid,
        kind: "file.write",
        key: "k1",
        requestFingerprint: "sha256:other",
        contract: "readBack",
      })
    ).toThrow(/already used with another request/);
    settle(c);
  });

  it("an interrupted reconcile returns its applying effect to pending; a retry reserves it", () => {
    apply("a", { n: 1 });
    let [c] = claimAll();
    const first = reserveReconcileEffect(f.store, c.claim, {
      uid: c.uid,
      kind: "k",
      key: "x",
      requestFingerprint: "sha256:r",
      contract: "readBack",
    });
    interruptReconcile(f.store, c.claim, {
      uid: c.uid,
      reason: "workerCrashed",
      countsAsError: true,
      retryDelayMs: 1000,
    });
    f.clock.advance(1000);
    [c] = claimAll();
    const again = reserveReconcileEffect(f.store, c.claim, {
      uid: c.uid,
      kind: "k",
      key: "x",
      requestFingerprint: "sha256:r",
      contract: "readBack",
    });
    expect(again).toEqual({ decision: "apply", effectId: first.effectId, state: "reserved" });
    settleReconcileEffect(f.store, c.claim, {
      uid: c.uid,
      effectId: first.effectId,
      outcome: "applied",
    });
    settle(c);
    const attempts = queryAll<{ state: string }>(
      f.store,
      "SELECT state FROM effect_attempts WHERE effect_id = :id ORDER BY attempt_no",
      { id: first.effectId },
    );
    expect(attempts.map((a) => a.state)).toEqual(["cancelled", "applied"]);
  });

  it("a reconcile that times out or ends with an effect still applying makes it ambiguous", () => {
    apply("a", { n: 1 });
    apply("b", { n: 1 });
    const [a, b] = claimAll();
    for (const c of [a, b]) {
      reserveReconcileEffect(f.store, c.claim, {
        uid: c.uid,
        kind: "k",
        key: "x",
        requestFingerprint: "sha256:r",
        contract: "readBack",
      });
    }
    expect(timeOutReconcile(f.store, a.claim, { uid: a.uid, timeoutMs: 10, retryDelayMs: 1000 }))
      .toMatchObject({ ambiguousEffects: 1 });
    expect(settle(b)).toMatchObject({ ambiguousEffects: 1 });
    // A fenced reconcile changes nothing.
    expect(() =>
      reserveReconcileEffect(f.store, a.claim, {
        uid: a.uid,
        kind: "k",
        key: "y",
        requestFingerprint: "sha256:r",
        contract: "readBack",
      })
    ).toThrow(ClaimLostError);
    f.clock.advance(1000);
    const [again] = claimAll().filter((c) => c.uid === a.uid);
    expect(
      reserveReconcileEffect(f.store, again.claim, {
        uid: a.uid,
        kind: "k",
        key: "x",
        requestFingerprint: "sha256:r",
        contract: "readBack",
      }).decision,
    ).toBe("refuse");
    settle(again);
  });

  it("an interrupted non-resumable effect becomes ambiguous; a read-back one is retried", () => {
    apply("a", { n: 1 });
    let [c] = claimAll();
    const reserve = (key: string, contract: "readBack" | "nonResumable") =>
      reserveReconcileEffect(f.store, c.claim, {
        uid: c.uid,
        kind: "k",
        key,
        requestFingerprint: "sha256:r",
        contract,
      });
    reserve("safe", "readBack");
    reserve("once", "nonResumable");
    expect(interruptReconcile(f.store, c.claim, {
      uid: c.uid,
      reason: "workerCrashed",
      countsAsError: true,
      retryDelayMs: 0,
    })).toMatchObject({ ambiguousEffects: 1 });
    [c] = claimAll();
    expect(reserve("safe", "readBack").decision).toBe("apply");
    expect(reserve("once", "nonResumable")).toMatchObject({
      decision: "refuse",
      state: "ambiguous",
    });
    settle(c);
  });

  it("an operator's reviewed verdict resolves an ambiguous effect with the reconcile request", () => {
    apply("a", { n: 1 });
    let [c] = claimAll();
    const reserve = (key: string) =>
      reserveReconcileEffect(f.store, c.claim, {
        uid: c.uid,
        kind: "k",
        key,
        requestFingerprint: "sha256:r",
        contract: "nonResumable",
      });
    const done = reserve("done").effectId;
    const undone = reserve("undone").effectId;
    interruptReconcile(f.store, c.claim, {
      uid: c.uid,
      reason: "workerCrashed",
      countsAsError: true,
      retryDelayMs: 0,
    });
    const ref = { projectPath: PIN.projectPath, name: PIN.name, key: "a" };
    const verdict = (effectId: string, v: "applied" | "notApplied", receipt?: unknown) =>
      requestReconcile(f.store, {
        ...ref,
        resolveEffect: { effectId, verdict: v, ...(receipt ? { receipt: receipt as never } : {}) },
      });
    expect(verdict(done, "applied", { id: 7 }).resolvedEffect).toEqual({
      effectId: done,
      state: "applied",
    });
    expect(verdict(undone, "notApplied").resolvedEffect).toEqual({
      effectId: undone,
      state: "pending",
    });
    expect(() => verdict(done, "notApplied")).toThrow(/is applied, not ambiguous/);
    expect(() => verdict("effect-nope", "applied")).toThrow(/has no effect effect-nope/);
    [c] = claimAll();
    expect(reserve("done")).toMatchObject({ decision: "adopt", receipt: { id: 7 } });
    expect(reserve("undone").decision).toBe("apply");
    settle(c);
  });

  it("an expired claim (the host died) is recovered: applying effects return to pending", () => {
    apply("a", { n: 1 });
    const [c] = claimAll();
    reserveReconcileEffect(f.store, c.claim, {
      uid: c.uid,
      kind: "k",
      key: "x",
      requestFingerprint: "sha256:r",
      contract: "readBack",
    });
    expect(listExpiredReconciles(f.store, f.clock.now())).toEqual([]);
    f.clock.advance(TTL);
    expect(listExpiredReconciles(f.store, f.clock.now())).toEqual([c.uid]);
    expect(claimAll()).toEqual([]); // not claimable before recovery
    recoverExpiredReconcile(f.store, { uid: c.uid, ownerId: "host-b", token: "t", ttlMs: TTL });
    const [again] = claimAll();
    expect(again.claim.generation).toBe(c.claim.generation + 2);
    expect(
      reserveReconcileEffect(f.store, again.claim, {
        uid: c.uid,
        kind: "k",
        key: "x",
        requestFingerprint: "sha256:r",
        contract: "readBack",
      }).decision,
    ).toBe("apply");
    settle(again, {});
  });

  it("a claim of an older host epoch is fenced: no write, recoverable at once", () => {
    apply("a", { n: 1 });
    const [c] = claimAll();
    const effect = {
      uid: c.uid,
      kind: "k",
      key: "x",
      requestFingerprint: "sha256:r",
      contract: "readBack",
    } as const;
    reserveReconcileEffect(f.store, c.claim, effect);
    releaseHostClaim(f.store, f.host);
    const next = acquireHostClaim(f.store, { ownerId: "host-b", token: "tb", ttlMs: TTL });
    expect(() => reserveReconcileEffect(f.store, c.claim, { ...effect, key: "y" })).toThrow(
      ClaimLostError,
    );
    expect(listExpiredReconciles(f.store, f.clock.now())).toEqual([c.uid]);
    recoverExpiredReconcile(f.store, { uid: c.uid, ownerId: "host-b", token: "t", ttlMs: TTL });
    const [again] = claimAll(next.epoch);
    expect(reserveReconcileEffect(f.store, again.claim, effect).decision).toBe("apply");
    settle(again, {});
  });
});

describe("a controller's budget", () => {
  it("caps what its child runs spend together; a raise from one child frees the others", () => {
    apply("a", { n: 1 });
    const [c] = claimAll();
    const child = (key: string) => {
      const decision = ensureChildRequest(f.store, c.claim, {
        uid: c.uid,
        requestKey: key,
        workflow: "copy",
        inputFingerprint: "sha256:i",
      });
      if (decision.kind !== "start") throw new Error("expected start");
      return startChildRun(f.store, c.claim, {
        uid: c.uid,
        requestId: decision.requestId,
        attempt: 1,
        run: COPY_RUN,
        poolBudget: { maxCostUsd: 1 },
      }).runId!;
    };
    const [first, second, third] = [child("k1"), child("k2"), child("k3")];
    settle(c);
    // The children's facts say so: their workers ask the host before each model step.
    expect(readRunFacts(f.store, first).budgetPool).toBe(true);
    /** Model steps `nodes` of the run, spending `cost` each. */
    const spend = (runId: string, cost: number, nodes = ["plan"]) => {
      const claim = launch(f.store, runId);
      for (const nodeId of nodes) {
        const attemptId = f.store.ids.next("attempt");
        recordNodeStarted(f.store, claim, {
          attemptId,
          nodeId,
          nodeKind: "agent",
          effect: "pure",
          deadlineAt: null,
        });
        const usage = { input: 100, output: 10, cacheRead: 0, cacheWrite: 0, cost };
        recordNodeFinished(f.store, claim, {
          attemptId,
          output: 1,
          usage: { ...usage, provider: "p", model: "m" },
        });
      }
      return claim;
    };
    // Each child alone is under $1 and has no budget of its own; together they reach it.
    completeRun(f.store, spend(first, 0.3, ["plan", "ship"]), { output: 1 });
    expect(readBudgetStop(f.store, second)).toBeNull();
    const secondClaim = spend(second, 0.5);
    expect(readRunBudget(f.store, second)).toEqual({});
    expect(readBudgetStop(f.store, second)).toBe(
      "controller sync's child runs spent $1.10 of $1.00",
    );
    expect(blockOverBudget(f.store, secondClaim, {}).blocked).toBe(true);
    // Status names the controller's total, not the child's own (it has none), and so does a
    // refused resume.
    const stop = "controller sync's child runs spent $1.10 of $1.00";
    const summary = runSummary(readRun(f.store, second)!);
    expect(summary.budgetStop).toBe(stop);
    expect(describeRunState(summary).reason).toBe(
      `${stop}: a person raises the budget or cancels the run`,
    );
    expect(() => resumeRun(f.store, { runId: second })).toThrow(
      `${stop}: raise the budget with`,
    );
    const thirdClaim = launch(f.store, third);
    expect(blockOverBudget(f.store, thirdClaim, {}).blocked).toBe(true);
    // A raise from one child lifts the controller's total and frees every child under it.
    const raised = raiseBudget(f.store, { runId: second, raiseCostUsd: 0.5 });
    expect(raised.unblocked).toBe(true);
    expect(readPoolSpend(f.store, third)?.budget).toEqual({ maxCostUsd: 1.5 });
    const blocked = queryAll<{ run_id: string }>(
      f.store,
      "SELECT run_id FROM runs WHERE blocked_reason IS NOT NULL",
    );
    expect(blocked).toEqual([]);
    // A fork a person makes of a child spends from the same total: what it adopts is counted
    // once (through its parent), what it spends itself counts.
    const before = readPoolSpend(f.store, third)!.spend;
    const fork = forkRun(f.store, {
      ...COPY_RUN,
      binding: { executionMode: "headless" },
      parentRunId: first,
      fromNodeId: "ship",
      source: "recorded",
    }).runId;
    expect(readRunFacts(f.store, fork).budgetPool).toBe(true);
    expect(readRun(f.store, fork)!.adoptedSpend?.cost).toBe(0.3); // its copy of first's plan
    expect(readPoolSpend(f.store, third)!.spend).toEqual(before);
    spend(fork, 0.5);
    expect(readBudgetStop(f.store, fork)).toBe(
      "controller sync's child runs spent $1.60 of $1.50",
    );
  });
});

describe("a controller's token-only total", () => {
  it("names --raise-tokens for the children it stops, with or without a cost limit of their own", () => {
    apply("a", { n: 1 });
    const [c] = claimAll();
    const child = (key: string, budget?: { maxCostUsd: number }) => {
      const decision = ensureChildRequest(f.store, c.claim, {
        uid: c.uid,
        requestKey: key,
        workflow: "copy",
        inputFingerprint: "sha256:i",
      });
      if (decision.kind !== "start") throw new Error("expected start");
      return startChildRun(f.store, c.claim, {
        uid: c.uid,
        requestId: decision.requestId,
        attempt: 1,
        run: { ...COPY_RUN, budget },
        poolBudget: { maxTokens: 200 },
      }).runId!;
    };
    // No budget of its own; its own cost limit, not reached.
    const [bare, costed] = [child("k1"), child("k2", { maxCostUsd: 5 })];
    settle(c);
    // 110 tokens each: the two reach the total of 200 together.
    const claims = [bare, costed].map((runId) => {
      const claim = launch(f.store, runId);
      const attemptId = f.store.ids.next("attempt");
      recordNodeStarted(f.store, claim, {
        attemptId,
        nodeId: "plan",
        nodeKind: "agent",
        effect: "pure",
        deadlineAt: null,
      });
      const usage = { input: 100, output: 10, cacheRead: 0, cacheWrite: 0, cost: 0.01 };
      recordNodeFinished(f.store, claim, {
        attemptId,
        output: 1,
        usage: { ...usage, provider: "p", model: "m" },
      });
      return claim;
    });
    for (const claim of claims) expect(blockOverBudget(f.store, claim, {}).blocked).toBe(true);
    for (const runId of [bare, costed]) {
      const next = describeRunState(runSummary(readRun(f.store, runId)!)).next;
      expect(next).toBe(`pi-workflows budget ${shortRunId(runId)} --raise-tokens <N>`);
    }
    // The flag named works: it lifts the total and frees both.
    expect(raiseBudget(f.store, { runId: costed, raiseTokens: 1000 }).unblocked).toBe(true);
    expect(readRun(f.store, bare)!.blockedReason).toBeNull();
  });
});

describe("child workflows", () => {
  it("a child run's end enqueues its parent; a cancelled child is restarted as attempt 2", () => {
    apply("a", { n: 1 });
    let [c] = claimAll();
    const decision = ensureChildRequest(f.store, c.claim, {
      uid: c.uid,
      requestKey: "sync-1",
      workflow: "copy",
      inputFingerprint: "sha256:i",
    });
    expect(decision).toMatchObject({ kind: "start", attempt: 1 });
    if (decision.kind !== "start") throw new Error("expected start");
    const ref = startChildRun(f.store, c.claim, {
      uid: c.uid,
      requestId: decision.requestId,
      attempt: 1,
      run: COPY_RUN,
    });
    expect(ref).toMatchObject({ state: "pending", attempt: 1 });
    settle(c);
    expect(listDueReconciles(f.store, f.clock.now(), 10)).toEqual([]);
    const runClaim = launch(f.store, ref.runId!);
    completeRun(f.store, runClaim, { output: { copied: true } });
    expect(readChildRef(f.store, decision.requestId)?.state).toBe("succeeded");
    expect(listDueReconciles(f.store, f.clock.now(), 10)).toHaveLength(1);
    [c] = claimAll();
    expect(ensureChildRequest(f.store, c.claim, {
      uid: c.uid,
      requestKey: "sync-1",
      workflow: "copy",
      inputFingerprint: "sha256:i",
    })).toMatchObject({ kind: "existing", ref: { state: "succeeded", runId: ref.runId } });
    expect(() =>
      ensureChildRequest(f.store, c.claim, {
        uid: c.uid,
        requestKey: "sync-1",
        workflow: "copy",
        inputFingerprint: "sha256:other",
      })
    ).toThrow(/already used with another workflow, input or interactive flag/);
    const second = ensureChildRequest(f.store, c.claim, {
      uid: c.uid,
      requestKey: "sync-2",
      workflow: "copy",
      inputFingerprint: "sha256:i",
    });
    if (second.kind !== "start") throw new Error("expected start");
    const secondRef = startChildRun(f.store, c.claim, {
      uid: c.uid,
      requestId: second.requestId,
      attempt: 1,
      run: COPY_RUN,
      blocked: { reason: "unsupportedInput", detail: "needs an origin session" },
    });
    expect(secondRef).toMatchObject({ state: "waiting", blockedReason: "unsupportedInput" });
    settle(c);
    cancelRun(f.store, { runId: secondRef.runId!, claim: null });
    [c] = claimAll();
    expect(ensureChildRequest(f.store, c.claim, {
      uid: c.uid,
      requestKey: "sync-2",
      workflow: "copy",
      inputFingerprint: "sha256:i",
    })).toMatchObject({ kind: "start", attempt: 2 });
    settle(c);
  });
});

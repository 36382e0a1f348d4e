/**
 * Session bindings on a real state file with a fake clock: approval, replacement and revocation
 * (one live binding per controller), an interactive child that waits for a binding, then for its
 * busy session (the `controller_session_freed` trigger enqueues the parent when the session's run
 * ends), then starts bound to that session; and the invariants that catch a child outside its
 * binding's session.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkInvariants } from "../../src/state/invariants.ts";
import { execute, queryAll } from "../../src/state/statements.ts";
import { applyResource } from "../../src/state/controllers/resources.ts";
import {
  claimReconciles,
  listDueReconciles,
  type ReconcileClaim,
} from "../../src/state/controllers/reconcile-claims.ts";
import { finishReconcile } from "../../src/state/controllers/reconcile-end.ts";
import {
  ensureChildRequest,
  startChildRun,
  type StartChildRunOptions,
} from "../../src/state/controllers/child-workflows.ts";
import {
  approveSessionBinding,
  revokeSessionBinding,
} from "../../src/state/controllers/session-bindings.ts";
import { listControllers } from "../../src/state/controllers/controller-queries.ts";
import { ControllerRefusal } from "../../src/state/controllers/errors.ts";
import { cancelRun } from "../../src/state/transitions/run-commands.ts";
import {
  enqueue,
  type Fixture,
  HOST,
  HOST_EPOCH,
  openFixture,
  TTL,
} from "../support/state-store.ts";

let f: Fixture;
beforeEach(() => {
  f = openFixture();
  applyResource(f.store, {
    controller: {
      projectPath: "/project",
      name: "asker",
      sourceRef: "/project/.pi/controllers/asker.controller.ts",
      source: { root: { kind: "file", path: "/p/a.controller.ts", hash: "sha256:a" }, mounted: [] },
      sourceDigest: "sha256:digest-a",
      timeoutMs: 60_000,
    },
    key: "a",
    spec: {},
    initialStatus: {},
  });
});
afterEach(() => {
  f.close();
});

const TARGET = { projectPath: "/project", name: "asker" };
const RUN: StartChildRunOptions["run"] = {
  workflowName: "ask",
  workflowRef: "/p/ask.workflow.ts",
  projectPath: "/project",
  workflowSource: { root: { kind: "builtin", id: "x", revision: "1" }, mounted: [] },
  definitionDigest: "sha256:d",
  input: {},
  inputHash: "sha256:i",
};

function claimOne(): ReconcileClaim {
  const due = listDueReconciles(f.store, f.clock.now(), 10);
  expect(due).toHaveLength(1);
  const [c] = claimReconciles(f.store, {
    uids: due.map((d) => d.uid),
    ownerId: HOST,
    hostEpoch: HOST_EPOCH,
    ttlMs: TTL,
    token: () => f.store.ids.token(),
  });
  return c!;
}

/** One reconcile: ensure the interactive child, try to start it, settle. */
function reconcileOnce() {
  const c = claimOne();
  const decision = ensureChildRequest(f.store, c.claim, {
    uid: c.uid,
    requestKey: "ask-1",
    workflow: "ask",
    inputFingerprint: "sha256:i",
    interactive: true,
  });
  const ref = decision.kind === "existing" ? decision.ref : startChildRun(f.store, c.claim, {
    uid: c.uid,
    requestId: decision.requestId,
    attempt: decision.attempt,
    run: RUN,
  });
  finishReconcile(f.store, c.claim, {
    uid: c.uid,
    expectedResourceVersion: c.resource.metadata.resourceVersion,
    outcome: {
      kind: "settled",
      status: { ...c.resource.status, observedGeneration: c.resource.metadata.generation },
    },
    retryDelayMs: 1000,
  });
  return ref;
}

function liveBindings() {
  return queryAll<{ binding_id: string; session_id: string }>(
    f.store,
    "SELECT binding_id, session_id FROM controller_session_bindings WHERE revoked_at IS NULL",
  );
}

describe("approved session bindings", () => {
  it("approve, approve again, replace, revoke: one live binding, refusals in one line", () => {
    expect(() => approveSessionBinding(f.store, { ...TARGET, name: "nobody", sessionId: "s1" }))
      .toThrow(/Controller not found in this project: nobody/);
    const refused = (() => {
      try {
        revokeSessionBinding(f.store, TARGET);
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(ControllerRefusal);
    expect(refused).toMatchObject({ outcome: "notFound", code: "sessionBindingNotFound" });
    const first = approveSessionBinding(f.store, { ...TARGET, sessionId: "s1" });
    expect(first).toMatchObject({ controller: "asker", replaced: false, unchanged: false });
    expect(approveSessionBinding(f.store, { ...TARGET, sessionId: "s1" })).toMatchObject({
      bindingId: first.bindingId,
      unchanged: true,
    });
    f.clock.advance(10);
    const second = approveSessionBinding(f.store, { ...TARGET, sessionId: "s2" });
    expect(second).toMatchObject({ replaced: true, unchanged: false });
    expect(liveBindings()).toEqual([{ binding_id: second.bindingId, session_id: "s2" }]);
    // The view names the binding, not the session.
    const [summary] = listControllers(f.store, "/project");
    expect(summary!.sessionBinding).toEqual({
      bindingId: second.bindingId,
      approvedAt: second.approvedAt,
    });
    expect(JSON.stringify(summary)).not.toContain("s2");
    expect(revokeSessionBinding(f.store, TARGET)).toMatchObject({
      bindingId: second.bindingId,
      activeChildRuns: 0,
    });
    expect(liveBindings()).toEqual([]);
    expect(listControllers(f.store, "/project")[0]!.sessionBinding).toBeNull();
    expect(checkInvariants(f.store)).toEqual([]);
  });

  it("a child waits for a binding, then for its busy session, then starts in that session", () => {
    expect(reconcileOnce()).toMatchObject({ state: "waiting", blockedReason: "unsupportedInput" });
    expect(listDueReconciles(f.store, f.clock.now(), 10)).toEqual([]);
    // The session already runs a workflow of its own.
    const own = enqueue(f.store, {
      binding: { executionMode: "interactive", originSessionId: "s1" },
    });
    approveSessionBinding(f.store, { ...TARGET, sessionId: "s1" });
    expect(reconcileOnce()).toMatchObject({ state: "waiting", blockedReason: "sessionBusy" });
    expect(listDueReconciles(f.store, f.clock.now(), 10)).toEqual([]);
    // Another session's run ending wakes nothing; the approved session's run ending does.
    const elsewhere = enqueue(f.store, {
      binding: { executionMode: "interactive", originSessionId: "s9" },
    });
    cancelRun(f.store, { runId: elsewhere, claim: null });
    expect(listDueReconciles(f.store, f.clock.now(), 10)).toEqual([]);
    cancelRun(f.store, { runId: own, claim: null });
    const started = reconcileOnce();
    expect(started).toMatchObject({ state: "pending", attempt: 1 });
    expect(started.runId).toBeDefined();
    expect(queryAll(
      f.store,
      "SELECT execution_mode, origin_session_id FROM run_bindings WHERE run_id = :runId",
      { runId: started.runId! },
    )).toEqual([{ execution_mode: "interactive", origin_session_id: "s1" }]);
    expect(revokeSessionBinding(f.store, TARGET).activeChildRuns).toBe(1);
    expect(checkInvariants(f.store)).toEqual([]);

    // A child outside its binding's session is a violation.
    execute(
      f.store,
      "UPDATE run_bindings SET origin_session_id = 's7' WHERE run_id = :runId",
      { runId: started.runId! },
    );
    expect(checkInvariants(f.store).map((v) => v.code)).toContain("sessionBindingMismatch");
    execute(
      f.store,
      "UPDATE controller_workflow_requests SET binding_id = NULL WHERE run_id = :runId",
      { runId: started.runId! },
    );
    expect(checkInvariants(f.store).map((v) => v.code)).toEqual(["interactiveChildHeadless"]);
  });

  it("the same key with another interactive flag is refused", () => {
    const c = claimOne();
    const base = { uid: c.uid, requestKey: "k", workflow: "ask", inputFingerprint: "sha256:i" };
    ensureChildRequest(f.store, c.claim, { ...base, interactive: true });
    expect(() => ensureChildRequest(f.store, c.claim, base)).toThrow(
      /already used with another workflow, input or interactive flag/,
    );
  });
});

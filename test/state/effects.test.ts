import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkInvariants } from "../../src/state/invariants.ts";
import { hostStatusCounts, readRun } from "../../src/state/queries.ts";
import { reserveEffect, settleEffect } from "../../src/state/transitions/effects.ts";
import {
  recordNodeFinished,
  recordNodeStarted,
} from "../../src/state/transitions/node-attempts.ts";
import { cancelRun, pauseRun, resumeRun } from "../../src/state/transitions/run-commands.ts";
import { completeRun } from "../../src/state/transitions/run-end.ts";
import { parkRun } from "../../src/state/transitions/run-park.ts";
import type { Claim } from "../../src/state/claims.ts";
import {
  enqueue,
  type Fixture,
  launch,
  launchWithAttempt,
  openFixture,
  snapshot,
} from "../support/state-store.ts";

let f: Fixture;
beforeEach(() => {
  f = openFixture();
});
afterEach(() => {
  expect(checkInvariants(f.store)).toEqual([]);
  f.close();
});

const request = (claim: Claim, attemptId: string, fp = "sha256:req") =>
  reserveEffect(f.store, claim, {
    attemptId,
    effectType: "http.post",
    idempotencyKey: "create-issue",
    requestFingerprint: fp,
  }).result;

function relaunchWithAttempt(runId: string): { claim: Claim; attemptId: string } {
  f.store.db.exec("UPDATE run_workers SET status = 'exited' WHERE status IN ('starting', 'live')");
  const claim = launch(f.store, runId);
  const attemptId = f.store.ids.next("attempt");
  recordNodeStarted(f.store, claim, {
    attemptId,
    nodeId: "step",
    nodeKind: "action",
    effect: "external",
    deadlineAt: null,
  });
  return { claim, attemptId };
}

describe("reserveEffect() / settleEffect()", () => {
  it("applies once; a repeat after a crash adopts the stored receipt", () => {
    const runId = enqueue(f.store);
    const first = launchWithAttempt(f.store, runId, "external");
    const reserved = request(first.claim, first.attemptId);
    expect(reserved.decision).toBe("apply");
    settleEffect(f.store, first.claim, {
      effectId: reserved.effectId,
      outcome: "applied",
      effectReceipt: { issue: 7 },
    });
    parkRun(f.store, first.claim, { reason: "workerExited" });
    const again = relaunchWithAttempt(runId);
    expect(request(again.claim, again.attemptId)).toEqual({
      decision: "adopt",
      effectId: reserved.effectId,
      state: "applied",
      receipt: { issue: 7 },
    });
    recordNodeFinished(f.store, again.claim, { attemptId: again.attemptId, output: 7 });
    completeRun(f.store, again.claim, { output: 7 });
    expect(hostStatusCounts(f.store).ambiguousEffects).toBe(0);
  });

  it("refuses the same key with another request, and reservation from a pure attempt", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId, "external");
    request(claim, attemptId);
    const before = snapshot(f.store);
    expect(() => request(claim, attemptId, "sha256:other")).toThrow(/already used with another/);
    expect(snapshot(f.store)).toBe(before);
    const pure = launchWithAttempt(f.store, enqueue(f.store), "pure");
    expect(() => request(pure.claim, pure.attemptId)).toThrow(/not a running external attempt/);
  });

  it("a stop mid-apply returns a managed effect to pending; the retry reserves the same effect", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId, "external");
    const first = request(claim, attemptId);
    const paused = pauseRun(f.store, { runId, claim });
    expect(paused.stopWorker).toBe(true);
    expect(readRun(f.store, runId)).toMatchObject({ paused: true, blockedReason: null });
    expect(f.store.db.prepare("SELECT state FROM effects").all()).toEqual([{ state: "pending" }]);
    resumeRun(f.store, { runId });
    const again = relaunchWithAttempt(runId);
    expect(request(again.claim, again.attemptId)).toEqual({
      decision: "apply",
      effectId: first.effectId,
      state: "reserved",
    });
    expect(
      f.store.db.prepare("SELECT attempt_no, state FROM effect_attempts ORDER BY attempt_no").all(),
    ).toEqual([{ attempt_no: 1, state: "cancelled" }, { attempt_no: 2, state: "applying" }]);
  });

  it("cancel while applying makes the effect ambiguous; a reserved retry is refused", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId, "external");
    request(claim, attemptId);
    cancelRun(f.store, { runId, claim });
    expect(f.store.db.prepare("SELECT state FROM effects").all()).toEqual([{ state: "ambiguous" }]);
    expect(hostStatusCounts(f.store).ambiguousEffects).toBe(1);
    // Another run using the same resource and key sees the ambiguous outcome.
    const other = launchWithAttempt(f.store, enqueue(f.store), "external");
    expect(
      reserveEffect(f.store, other.claim, {
        attemptId: other.attemptId,
        effectType: "http.post",
        idempotencyKey: "create-issue",
        requestFingerprint: "sha256:req",
        resource: `run:${runId}`,
      }).result,
    ).toMatchObject({ decision: "refuse", state: "ambiguous" });
  });

  it("settling twice or another run's effect is refused", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId, "external");
    const { effectId } = request(claim, attemptId);
    settleEffect(f.store, claim, { effectId, outcome: "rejected", errorCode: "http422" });
    expect(() => settleEffect(f.store, claim, { effectId, outcome: "applied" })).toThrow(
      /is not applying/,
    );
  });
});

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readLease, runResource } from "../../src/state/claims.ts";
import { ClaimLostError } from "../../src/state/errors.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import {
  hostStatusCounts,
  listAttempts,
  listEvents,
  listExpiredRuns,
  readRun,
  readRunFacts,
  viewerDeltasSince,
} from "../../src/state/queries.ts";
import {
  recordNodeFailed,
  recordNodeFinished,
  recordNodeStarted,
  recordNodeUpdate,
  timeOutAttempt,
} from "../../src/state/transitions/node-attempts.ts";
import { cancelRun, pauseRun, resumeRun } from "../../src/state/transitions/run-commands.ts";
import { completeRun, failRun, timeOutRun } from "../../src/state/transitions/run-end.ts";
import {
  claimRunForLaunch,
  markWorkerLive,
  nextLaunchableRuns,
} from "../../src/state/transitions/run-launch.ts";
import { blockRun, parkRun, waitRun } from "../../src/state/transitions/run-park.ts";
import { recoverExpiredRun } from "../../src/state/transitions/run-recovery.ts";
import { finishWorkerEpoch } from "../../src/state/transitions/workers.ts";
import {
  enqueue,
  expectRefused,
  type Fixture,
  HOST,
  HOST_EPOCH,
  launch,
  launchWithAttempt,
  openFixture,
  pairOf,
  snapshot,
  TTL,
} from "../support/state-store.ts";

let f: Fixture;
beforeEach(() => {
  f = openFixture();
});
afterEach(() => {
  expect(checkInvariants(f.store)).toEqual([]);
  f.close();
});

const pair = (runId: string) => pairOf(f.store, runId);
const refused = (fn: () => unknown, pattern: RegExp) => expectRefused(f.store, fn, pattern);

describe("launch path", () => {
  it("enqueue -> launching -> live -> node start/update/finish -> completed", () => {
    const runId = enqueue(f.store, {
      binding: { executionMode: "interactive", originSessionId: "s1" },
    });
    expect(pair(runId)).toBe("queued/queued");
    expect(nextLaunchableRuns(f.store, 10).map((r) => r.runId)).toEqual([runId]);
    const { claim, generation, revision } = claimRunForLaunch(f.store, {
      hostEpoch: HOST_EPOCH,
      runId,
      ownerId: HOST,
      token: "tok",
      ttlMs: TTL,
      workerEpoch: "w1",
      launchEnvelopeHash: "sha256:e",
    });
    expect([generation, revision, pair(runId)]).toEqual([1, 2, "running/starting"]);
    expect(nextLaunchableRuns(f.store, 10)).toEqual([]);
    refused(() =>
      recordNodeStarted(f.store, claim, {
        attemptId: "a0",
        nodeId: "n",
        nodeKind: "compute",
        effect: "pure",
        deadlineAt: null,
      }), /^Cannot start a node of run \S+: it is starting$/);
    refused(
      () => markWorkerLive(f.store, claim, { workerEpoch: "other", pid: 1, startIdentity: "x" }),
      /not the starting epoch/,
    );
    markWorkerLive(f.store, claim, { workerEpoch: "w1", pid: 10, startIdentity: "st" });
    expect(pair(runId)).toBe("running/running");
    const started = recordNodeStarted(f.store, claim, {
      attemptId: "a1",
      nodeId: "n1",
      nodeKind: "compute",
      effect: "pure",
      deadlineAt: f.clock.now() + 5000,
    });
    expect(started.sequence).toBe(1);
    refused(() =>
      recordNodeStarted(f.store, claim, {
        attemptId: "a2",
        nodeId: "n2",
        nodeKind: "compute",
        effect: "pure",
        deadlineAt: null,
      }), /attempt a1 is still open/);
    recordNodeUpdate(f.store, claim, {
      attemptId: "a1",
      type: "progress",
      key: "k",
      data: { n: 1 },
    });
    recordNodeUpdate(f.store, claim, {
      attemptId: "a1",
      type: "progress",
      key: "k",
      data: { n: 2 },
    });
    expect(f.store.db.prepare("SELECT count, data_json FROM node_updates").get()).toEqual({
      count: 2,
      data_json: '{"n":2}',
    });
    refused(() => completeRun(f.store, claim, { output: 1 }), /attempt a1 is still open/);
    recordNodeFinished(f.store, claim, { attemptId: "a1", output: { answer: 42 } });
    refused(
      () => recordNodeFinished(f.store, claim, { attemptId: "a1", output: 1 }),
      /attempt a1 is ok/,
    );
    const done = completeRun(f.store, claim, { output: { final: true } });
    expect(pair(runId)).toBe("completed/done");
    expect(readLease(f.store, runResource(runId))?.token_hash).toBeNull();
    expect(listEvents(f.store, runId).map((e) => e.type)).toEqual([
      "run.queued",
      "run.launching",
      "worker.live",
      "node.started",
      "node.update",
      "node.update",
      "node.finished",
      "run.completed",
    ]);
    expect(done.revision).toBe(8);
    expect(readRun(f.store, runId)?.output).toEqual({ final: true });
    const facts = readRunFacts(f.store, runId);
    expect(facts.attempts).toMatchObject([{
      attemptId: "a1",
      state: "ok",
      output: { answer: 42 },
    }]);
    expect(listAttempts(f.store, runId)).toEqual([{
      attemptId: "a1",
      nodeId: "n1",
      sequence: 1,
      nodeKind: "compute",
      effect: "pure",
      state: "ok",
      startedAt: facts.attempts[0]!.startedAt,
      finishedAt: facts.attempts[0]!.finishedAt,
      deadlineAt: facts.attempts[0]!.deadlineAt,
      error: null,
      adoptedFrom: null,
    }]);
    // Terminal rows are immutable; a finished run cannot be claimed again.
    expect(() => f.store.db.exec(`UPDATE runs SET title = 'x' WHERE run_id = '${runId}'`)).toThrow(
      /immutable/,
    );
    expect(() => f.store.db.exec(`DELETE FROM events`)).toThrow(
      /only with their run, by a retention prune/,
    );
    expect(() => completeRun(f.store, claim, { output: 1 })).toThrow(ClaimLostError);
    finishWorkerEpoch(f.store, {
      workerEpoch: "w1",
      status: "exited",
      exitCode: 0,
      signal: null,
      diagnosticHash: null,
    });
    expect(() =>
      finishWorkerEpoch(f.store, {
        workerEpoch: "w1",
        status: "crashed",
        exitCode: 1,
        signal: null,
        diagnosticHash: null,
      })
    ).toThrow(/already finished/);
    expect(viewerDeltasSince(f.store, 0).at(-1)).toMatchObject({ kind: "worker.finished" });
  });

  it("records a kept process's epoch end in a commit not synced, any other synced", () => {
    f.store.db.exec("PRAGMA synchronous = FULL");
    const syncAtCommit: number[] = [];
    const epochs = ["w-kept", "w-other"].map((workerEpoch) => {
      const runId = enqueue(f.store);
      claimRunForLaunch(f.store, {
        runId,
        ownerId: HOST,
        hostEpoch: HOST_EPOCH,
        token: f.store.ids.token(),
        ttlMs: TTL,
        workerEpoch,
        launchEnvelopeHash: "sha256:00",
      });
      return workerEpoch;
    });
    f.store.beforeStatement = (sql) => {
      if (sql !== "COMMIT") return;
      const row = f.store.db.prepare("PRAGMA synchronous").get() as { synchronous: number };
      syncAtCommit.push(row.synchronous);
    };
    for (const [i, workerEpoch] of epochs.entries()) {
      finishWorkerEpoch(f.store, {
        workerEpoch,
        status: "exited",
        exitCode: 0,
        signal: null,
        diagnosticHash: null,
        synced: i !== 0,
      });
    }
    expect(syncAtCommit).toEqual([1, 2]);
    const statuses = f.store.db.prepare(
      "SELECT worker_epoch, status FROM run_workers ORDER BY worker_epoch",
    ).all();
    expect(statuses).toEqual([
      { worker_epoch: "w-kept", status: "exited" },
      { worker_epoch: "w-other", status: "exited" },
    ]);
  });

  it("refuses to launch paused, blocked, waiting, terminal or still-active runs", () => {
    const runId = enqueue(f.store);
    const claimOpts = {
      runId,
      ownerId: HOST,
      hostEpoch: HOST_EPOCH,
      token: "t",
      ttlMs: TTL,
      workerEpoch: "w",
      launchEnvelopeHash: "h",
    };
    pauseRun(f.store, { runId, claim: null });
    refused(() => claimRunForLaunch(f.store, claimOpts), /Cannot launch run \S+: it is paused/);
    resumeRun(f.store, { runId });
    const claim = launch(f.store, runId);
    refused(() => claimRunForLaunch(f.store, claimOpts), /Cannot launch run \S+: it is running/);
    parkRun(f.store, claim, { reason: "hostShutdown" });
    refused(
      () => claimRunForLaunch(f.store, { ...claimOpts, workerEpoch: "w2" }),
      /previous worker epoch is still active/,
    );
    const [active] = f.store.db.prepare(
      "SELECT worker_epoch FROM run_workers WHERE status = 'live'",
    ).all() as Array<{ worker_epoch: string }>;
    finishWorkerEpoch(f.store, {
      workerEpoch: active!.worker_epoch,
      status: "exited",
      exitCode: 0,
      signal: null,
      diagnosticHash: null,
    });
    expect(nextLaunchableRuns(f.store, 5).map((r) => r.runId)).toEqual([runId]);
    const again = claimRunForLaunch(f.store, { ...claimOpts, workerEpoch: "w3" });
    expect(again.generation).toBe(claim.generation + 1);
  });

  it("orders launchable runs by priority then creation, honouring available time", () => {
    const a = enqueue(f.store);
    const b = enqueue(f.store, { priority: 5 });
    const c = enqueue(f.store, { availableAt: f.clock.now() + 1000 });
    expect(nextLaunchableRuns(f.store, 10).map((r) => r.runId)).toEqual([b, a]);
    f.clock.advance(1000);
    expect(nextLaunchableRuns(f.store, 2).map((r) => r.runId)).toEqual([b, a]);
    expect(nextLaunchableRuns(f.store, 10).map((r) => r.runId)).toEqual([b, a, c]);
  });
});

describe("node outcomes and deadlines", () => {
  it("records failed, timed_out and cancelled node outcomes while the run keeps running", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    recordNodeFailed(f.store, claim, {
      attemptId,
      outcome: "failed",
      error: { code: "nodeFailed", message: "boom" },
    });
    expect(pair(runId)).toBe("running/running");
    expect(listEvents(f.store, runId).at(-1)?.type).toBe("node.failed");
    expect(readRunFacts(f.store, runId).attempts[0]).toMatchObject({
      state: "failed",
      error: { code: "nodeFailed", message: "boom" },
    });
  });

  it("timeOutAttempt parks the run with a workerTimedOut attempt and releases the claim", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    timeOutAttempt(f.store, claim, { attemptId });
    expect(pair(runId)).toBe("running/parked");
    expect(readRunFacts(f.store, runId).attempts[0]).toMatchObject({
      state: "timed_out",
      error: { code: "workerTimedOut" },
    });
    expect(readLease(f.store, runResource(runId))?.token_hash).toBeNull();
  });
});

describe("terminal transitions", () => {
  it("failRun closes the open attempt, settles effects and interactions, releases the claim", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId, "external");
    f.store.db.exec(
      `INSERT INTO effects (effect_id, run_id, attempt_id, effect_key, effect_type, request_fingerprint, state, created_at, updated_at) VALUES ('e1', '${runId}', '${attemptId}', 'k1', 'http', 'fp', 'pending', 0, 0), ('e2', '${runId}', '${attemptId}', 'k2', 'http', 'fp', 'applying', 0, 0)`,
    );
    failRun(f.store, claim, { error: { code: "nodeFailed", message: "bad" } });
    expect(pair(runId)).toBe("failed/failed");
    expect(f.store.db.prepare("SELECT state FROM effects ORDER BY effect_id").all()).toEqual([
      { state: "cancelled" },
      { state: "ambiguous" },
    ]);
    expect(readRun(f.store, runId)?.error).toEqual({ code: "nodeFailed", message: "bad" });
    expect(hostStatusCounts(f.store).ambiguousEffects).toBe(1);
  });

  it("timeOutRun ends timed_out/failed; a claim-lost owner writes no terminal event", () => {
    const runId = enqueue(f.store);
    const { claim } = launchWithAttempt(f.store, runId);
    f.clock.advance(TTL);
    const before = snapshot(f.store);
    expect(() => failRun(f.store, claim, { error: { code: "x", message: "y" } })).toThrow(
      ClaimLostError,
    );
    expect(snapshot(f.store)).toBe(before);
    expect(listExpiredRuns(f.store)).toEqual([runId]);
    recoverExpiredRun(f.store, { runId, ownerId: HOST, token: "r", ttlMs: TTL });
    const claim2 = launch(f.store, runId);
    timeOutRun(f.store, claim2);
    expect(pair(runId)).toBe("timed_out/failed");
    expect(readRun(f.store, runId)?.error?.code).toBe("runTimedOut");
  });
});

describe("waiting, parking, blocking", () => {
  it("waitRun parks the run waiting with a pending decision and no claim", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    refused(
      () =>
        waitRun(f.store, claim, { attemptId, nodeId: "wrong", kind: "checkpoint", request: {} }),
      /not the running attempt/,
    );
    const { decisionId } = waitRun(f.store, claim, {
      attemptId,
      nodeId: "step",
      kind: "humanDecision",
      request: { prompt: "ok?" },
    });
    expect(pair(runId)).toBe("waiting/parked");
    expect(
      f.store.db.prepare("SELECT state FROM human_decisions WHERE decision_id = ?").get(decisionId),
    )
      .toEqual({ state: "pending" });
    expect(hostStatusCounts(f.store)).toMatchObject({ waiting: 1, pendingInteractions: 1 });
    expect(nextLaunchableRuns(f.store, 5)).toEqual([]);
    expect(() => parkRun(f.store, claim, { reason: "x" })).toThrow(ClaimLostError);
    cancelRun(f.store, { runId, claim: null });
    expect(f.store.db.prepare("SELECT resolution FROM human_decision_resolutions").all()).toEqual([
      { resolution: "cancelled" },
    ]);
  });

  it("parkRun interrupts a running attempt; the next launch takes a new generation", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    parkRun(f.store, claim, { reason: "hostShutdown" });
    expect(pair(runId)).toBe("running/parked");
    expect(readRunFacts(f.store, runId).attempts[0]).toMatchObject({
      attemptId,
      state: "interrupted",
    });
    expect(() => parkRun(f.store, claim, { reason: "again" })).toThrow(/missingAuthority/);
  });

  it("blockRun keeps the scheduler away until resumeRun", () => {
    const runId = enqueue(f.store);
    const claim = launch(f.store, runId);
    blockRun(f.store, claim, {
      runId,
      reason: "workflowSourceChanged",
      detail: "root hash differs",
    });
    expect(pair(runId)).toBe("running/parked");
    expect(readRun(f.store, runId)?.blockedReason).toBe("workflowSourceChanged");
    f.store.db.exec("UPDATE run_workers SET status = 'exited'");
    expect(nextLaunchableRuns(f.store, 5)).toEqual([]);
    const queued = enqueue(f.store);
    blockRun(f.store, null, { runId: queued, reason: "workflowSourceChanged", detail: "x" });
    expect(pair(queued)).toBe("queued/queued");
    expect(nextLaunchableRuns(f.store, 5)).toEqual([]);
    resumeRun(f.store, { runId });
    resumeRun(f.store, { runId: queued });
    expect(nextLaunchableRuns(f.store, 5).map((r) => r.runId).sort()).toEqual(
      [runId, queued].sort(),
    );
    refused(
      () => resumeRun(f.store, { runId }),
      /^Cannot resume run \S+: it is between steps, not paused or blocked: it goes on by itself$/,
    );
  });
});

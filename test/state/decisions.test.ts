import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fingerprint } from "../../src/protocol/canonical-json.ts";
import { recordNodeStarted } from "../../src/state/transitions/node-attempts.ts";
import {
  dueDecisionDefaults,
  dueWaitTimeouts,
  nextDecisionDefaultAt,
  nextWaitTimeoutAt,
} from "../../src/state/decision-deadlines.ts";
import { AnswerRefusedError, RevisionConflictError } from "../../src/state/errors.ts";
import { findHostCommand } from "../../src/state/host-commands.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { hostStatusCounts, listEvents, readRunFacts } from "../../src/state/queries.ts";
import {
  answerDecision,
  applyDecisionDefault,
  timeOutWaitingAttempt,
} from "../../src/state/transitions/decisions.ts";
import { cancelRun, pauseRun, resumeRun } from "../../src/state/transitions/run-commands.ts";
import { nextLaunchableRuns } from "../../src/state/transitions/run-launch.ts";
import { waitRun } from "../../src/state/transitions/run-park.ts";
import { readWaiting } from "../../src/state/waiting-queries.ts";
import {
  enqueue,
  type Fixture,
  HOST,
  launch,
  openFixture,
  pairOf,
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

interface Waiting {
  runId: string;
  attemptId: string;
  decisionId: string;
}

function waiting(
  opts: {
    kind?: "checkpoint" | "humanDecision";
    deadlineInMs?: number;
    defaultInMs?: number;
    nodeId?: string;
  } = {},
): Waiting {
  const kind = opts.kind ?? "checkpoint";
  const nodeId = opts.nodeId ?? "ask";
  const runId = enqueue(f.store);
  const claim = launch(f.store, runId);
  const attemptId = f.store.ids.next("attempt");
  recordNodeStarted(f.store, claim, {
    attemptId,
    nodeId,
    nodeKind: kind,
    effect: "pure",
    deadlineAt: opts.deadlineInMs === undefined ? null : f.clock.now() + opts.deadlineInMs,
  });
  const { decisionId } = waitRun(f.store, claim, {
    attemptId,
    nodeId,
    kind,
    request: { question: "go?" },
    timeoutDefault: opts.defaultInMs === undefined
      ? null
      : { afterMs: opts.defaultInMs, response: { choice: "approve" } },
  });
  f.store.db.exec("UPDATE run_workers SET status = 'exited' WHERE status IN ('starting', 'live')");
  return { runId, attemptId, decisionId };
}

const answer = (w: Waiting, extra: Partial<Parameters<typeof answerDecision>[1]> = {}) =>
  answerDecision(f.store, {
    runId: w.runId,
    nodeId: "ask",
    attemptId: w.attemptId,
    kind: "checkpoint",
    answer: { go: true },
    ownerId: HOST,
    ...extra,
  });

/** Expects an `AnswerRefusedError` with `code` and no change at all. */
function expectAnswerRefused(fn: () => unknown, code: string, pattern: RegExp): void {
  const before = snapshot(f.store);
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(AnswerRefusedError);
  expect((thrown as AnswerRefusedError).code).toBe(code);
  expect((thrown as Error).message).toMatch(pattern);
  expect(snapshot(f.store)).toBe(before);
}

describe("answerDecision()", () => {
  it("records the answer, the resolution, the receipt and the next step in one commit", () => {
    const w = waiting();
    const closed = answer(w, {
      receipt: {
        requestId: "answer-1",
        clientId: "cli",
        operation: "checkpoint.answer",
        requestFingerprint: fingerprint({ go: true }),
        receipt: { ok: true },
      },
    });
    expect(pairOf(f.store, w.runId)).toBe("running/parked");
    // The same run resumes in place: the waiting attempt is now ok with the answer as output.
    expect(readRunFacts(f.store, w.runId).attempts).toMatchObject([
      { attemptId: w.attemptId, state: "ok", output: { go: true } },
    ]);
    expect(closed).toMatchObject({ runId: w.runId, decisionId: w.decisionId, generation: 2 });
    expect(findHostCommand(f.store, "answer-1")?.acceptedRevision).toBe(closed.revision);
    expect(listEvents(f.store, w.runId).at(-1)).toMatchObject({
      type: "run.answered",
      payload: { decisionId: w.decisionId, nodeId: "ask", resolution: "answered" },
    });
    expect(hostStatusCounts(f.store)).toMatchObject({ waiting: 0, pendingInteractions: 0 });
    expect(readWaiting(f.store, w.runId)).toBeUndefined();
    expect(nextLaunchableRuns(f.store, 5).map((r) => r.runId)).toEqual([w.runId]);
    // The control claim took a generation: the next worker's is newer still.
    expect(launch(f.store, w.runId).generation).toBe(3);
  });

  it("closes a pending interactive request of the answered attempt", () => {
    const w = waiting();
    f.store.db.prepare(
      "INSERT INTO interactive_requests (request_id, run_id, attempt_id, node_id, kind, " +
        "contract_json, contract_hash, status, created_at) VALUES ('req-1', ?, ?, 'ask', " +
        "'checkpoint', '{}', 'h', 'pending', 0)",
    ).run(w.runId, w.attemptId);
    answer(w);
    expect(f.store.db.prepare("SELECT status FROM interactive_requests").get()).toEqual({
      status: "settled",
    });
  });

  it("refuses a second answer, a stale attempt, another node and the wrong kind", () => {
    const w = waiting();
    answer(w);
    expectAnswerRefused(() => answer(w), "alreadyAnswered", /was already answered at /);

    const next = waiting();
    expectAnswerRefused(
      () => answer(next, { attemptId: "attempt-old" }),
      "staleAttempt",
      /is not the waiting attempt of node "ask" \(it waits as attempt /,
    );
    expectAnswerRefused(
      () => answer(next, { nodeId: "other" }),
      "nodeNotWaiting",
      /waits at node "ask", not "other"/,
    );
    expectAnswerRefused(
      () => answer(next, { kind: "humanDecision" }),
      "wrongKind",
      /is a checkpoint; answer it with checkpoint.answer/,
    );
    const decision = waiting({ kind: "humanDecision" });
    expectAnswerRefused(
      () => answer(decision, { kind: "checkpoint" }),
      "wrongKind",
      /is a protected human decision; only a person answers it/,
    );
    // An attempt of another run is not this run's waiting attempt.
    expectAnswerRefused(
      () => answer({ ...next, attemptId: decision.attemptId }),
      "staleAttempt",
      /is not the waiting attempt/,
    );
  });

  it("refuses a run that is not waiting, a cancelled one, a stale revision and an unknown run", () => {
    const running = enqueue(f.store);
    expectAnswerRefused(
      () => answer({ runId: running, attemptId: "a", decisionId: "d" }),
      "notWaiting",
      /is not waiting for an answer: it is queued$/,
    );
    const w = waiting();
    expect(() => answer(w, { expectedRevision: 1 })).toThrow(RevisionConflictError);
    cancelRun(f.store, { runId: w.runId, claim: null });
    expectAnswerRefused(() => answer(w), "notWaiting", /was closed when the run was cancelled/);
    expect(() => answer({ ...w, runId: "nope" })).toThrow(/Unknown run: nope/);
  });

  it("refuses an answer once a deadline passed, even before the host applied it", () => {
    const w = waiting({ kind: "humanDecision", defaultInMs: 1000 });
    f.clock.advance(1000);
    expectAnswerRefused(
      () => answer(w, { kind: "humanDecision", answer: { choice: "reject" } }),
      "deadlinePassed",
      /deadline of human decision "ask" passed at .*; the host records what its timeout says/,
    );
    const t = waiting({ deadlineInMs: 500 });
    f.clock.advance(500);
    expectAnswerRefused(() => answer(t), "deadlinePassed", /passed at /);
    // Both are then closed by their deadline kinds.
    expect(applyDecisionDefault(f.store, { decisionId: w.decisionId, ownerId: HOST })).not.toBe(
      null,
    );
    expect(timeOutWaitingAttempt(f.store, { attemptId: t.attemptId, ownerId: HOST })).not.toBe(
      null,
    );
  });

  it("lets a paused waiting run be answered; it launches after resume", () => {
    const w = waiting();
    pauseRun(f.store, { runId: w.runId, claim: null });
    answer(w);
    expect(nextLaunchableRuns(f.store, 5)).toEqual([]);
    resumeRun(f.store, { runId: w.runId });
    expect(nextLaunchableRuns(f.store, 5).map((r) => r.runId)).toEqual([w.runId]);
  });
});

describe("applyDecisionDefault()", () => {
  it("records the saved default at its deadline; a later answer is refused", () => {
    const w = waiting({ kind: "humanDecision", defaultInMs: 60_000 });
    expect(nextDecisionDefaultAt(f.store)).toBe(f.clock.now() + 60_000);
    expect(applyDecisionDefault(f.store, { decisionId: w.decisionId, ownerId: HOST })).toBe(null);
    f.clock.advance(60_000);
    expect(dueDecisionDefaults(f.store, f.clock.now(), 10)).toEqual([
      { decisionId: w.decisionId, runId: w.runId },
    ]);
    let committing = false;
    const closed = applyDecisionDefault(f.store, {
      decisionId: w.decisionId,
      ownerId: HOST,
      beforeCommit: () => (committing = f.store.db.isTransaction),
    });
    expect(committing).toBe(true);
    expect(closed).toMatchObject({ generation: 2 });
    expect(readRunFacts(f.store, w.runId).attempts).toMatchObject([
      { state: "ok", output: { choice: "approve" } },
    ]);
    expect(listEvents(f.store, w.runId).at(-1)).toMatchObject({
      type: "run.answered",
      payload: { resolution: "timeoutDefault" },
    });
    expect(nextDecisionDefaultAt(f.store)).toBe(null);
    expectAnswerRefused(
      () => answer(w, { kind: "humanDecision", answer: { choice: "reject" } }),
      "deadlinePassed",
      /passed and its default was recorded at /,
    );
    // A second application finds nothing pending.
    expect(applyDecisionDefault(f.store, { decisionId: w.decisionId, ownerId: HOST })).toBe(null);
  });

  it("does nothing for an answered or cancelled decision", () => {
    const answered = waiting({ kind: "humanDecision", defaultInMs: 10 });
    answer(answered, { kind: "humanDecision", answer: { choice: "approve" } });
    const cancelled = waiting({ kind: "humanDecision", defaultInMs: 10 });
    cancelRun(f.store, { runId: cancelled.runId, claim: null });
    f.clock.advance(10);
    expect(dueDecisionDefaults(f.store, f.clock.now(), 10)).toEqual([]);
    for (const w of [answered, cancelled]) {
      expect(applyDecisionDefault(f.store, { decisionId: w.decisionId, ownerId: HOST })).toBe(
        null,
      );
    }
  });
});

describe("timeOutWaitingAttempt()", () => {
  it("ends a waiting attempt timed_out at its own deadline and makes the run launchable", () => {
    const w = waiting({ deadlineInMs: 5000 });
    expect(nextWaitTimeoutAt(f.store)).toBe(f.clock.now() + 5000);
    expect(dueWaitTimeouts(f.store, f.clock.now(), 10)).toEqual([]);
    f.clock.advance(5000);
    expect(dueWaitTimeouts(f.store, f.clock.now(), 10)).toEqual([
      { attemptId: w.attemptId, runId: w.runId },
    ]);
    expect(timeOutWaitingAttempt(f.store, { attemptId: w.attemptId, ownerId: HOST })).toMatchObject(
      { runId: w.runId },
    );
    expect(readRunFacts(f.store, w.runId).attempts).toMatchObject([
      { state: "timed_out", error: { code: "nodeTimedOut" } },
    ]);
    expect(pairOf(f.store, w.runId)).toBe("running/parked");
    expect(listEvents(f.store, w.runId).at(-1)).toMatchObject({ type: "node.timed_out" });
    expect(nextWaitTimeoutAt(f.store)).toBe(null);
    expectAnswerRefused(
      () => answer(w),
      "deadlinePassed",
      /timed out at .* before anyone answered/,
    );
    expect(timeOutWaitingAttempt(f.store, { attemptId: w.attemptId, ownerId: HOST })).toBe(null);
  });

  it("ignores waiting attempts without a deadline and those of other kinds", () => {
    waiting();
    expect(nextWaitTimeoutAt(f.store)).toBe(null);
  });
});

describe("checkInvariants() decisionAttemptMismatch", () => {
  it("reports a decision whose closing disagrees with its attempt", () => {
    const w = waiting();
    answer(w);
    f.store.db.prepare("UPDATE node_attempts SET state = 'failed' WHERE attempt_id = ?").run(
      w.attemptId,
    );
    expect(checkInvariants(f.store)).toEqual([
      expect.objectContaining({ code: "decisionAttemptMismatch", runId: w.runId }),
    ]);
    f.store.db.prepare("UPDATE node_attempts SET state = 'ok' WHERE attempt_id = ?").run(
      w.attemptId,
    );
  });
});

/**
 * The Pi outbox in the state layer: notifications committed with their notify attempt's finish
 * and claimed under a lease; completion presentations ineligible until the terminal commit;
 * a checkpoint's presentation eligible in the commit that parks the run, once per wait;
 * successor turns with deterministic ids, at most one eligible per run; supersession.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkInvariants } from "../../src/state/invariants.ts";
import { RefusedError } from "../../src/state/errors.ts";
import { listRunNotifications, readTurnRunFacts } from "../../src/state/outbox-queries.ts";
import {
  recordNodeFinished,
  recordNodeStarted,
} from "../../src/state/transitions/node-attempts.ts";
import {
  claimNotifications,
  deliverNotification,
  OUTBOX_LEASE_MS,
} from "../../src/state/transitions/notifications.ts";
import { cancelRun } from "../../src/state/transitions/run-commands.ts";
import { completeRun, failRun, timeOutRun } from "../../src/state/transitions/run-end.ts";
import { waitRun } from "../../src/state/transitions/run-park.ts";
import { answerDecision } from "../../src/state/transitions/decisions.ts";
import { finishWorkerEpoch } from "../../src/state/transitions/workers.ts";
import { requestInteraction } from "../../src/state/transitions/interactions.ts";
import { timeOutInteraction } from "../../src/state/transitions/interaction-verdicts.ts";
import { buildStepContract } from "../../src/workflows/step-contract.ts";
import {
  recordStrandedTurnInTx,
  requestPresentation,
  turnIntentId,
} from "../../src/state/transitions/turn-intents.ts";
import type { WaitingPresentation } from "../../src/protocol/waiting-presentation.ts";
import { claimTurn, resolveTurn } from "../../src/state/transitions/turn-delivery.ts";
import { writeTransaction } from "../../src/state/transactions.ts";
import type { Claim } from "../../src/state/claims.ts";
import {
  enqueue,
  type Fixture,
  HOST,
  launch,
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

const SESSION = "session-1";
const interactive = (session = SESSION) => ({
  binding: { executionMode: "interactive" as const, originSessionId: session },
});

function notify(claim: Claim, nodeId: string, kind: "progress" | "final", message: string) {
  const attemptId = f.store.ids.next("attempt");
  recordNodeStarted(f.store, claim, {
    attemptId,
    nodeId,
    nodeKind: "notify",
    effect: "pure",
    deadlineAt: null,
  });
  return recordNodeFinished(f.store, claim, {
    attemptId,
    output: { kind, message },
    notification: { kind, message },
  });
}

/** The live worker epoch exits (so the run can be launched again). */
function endLiveEpoch(): void {
  const live = f.store.db.prepare(
    "SELECT worker_epoch FROM run_workers WHERE status IN ('starting', 'live')",
  ).all() as { worker_epoch: string }[];
  for (const { worker_epoch } of live) {
    finishWorkerEpoch(f.store, {
      workerEpoch: worker_epoch,
      status: "exited",
      exitCode: 0,
      signal: null,
      diagnosticHash: null,
    });
  }
}

function refusal(fn: () => unknown): { outcome: string; code: string } {
  const before = snapshot(f.store);
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(RefusedError);
    expect(snapshot(f.store)).toBe(before);
    const e = error as RefusedError;
    return { outcome: e.outcome, code: e.code };
  }
  throw new Error("expected a refusal");
}

describe("notifications", () => {
  it("are committed with the notify attempt's finish, one per visit, in order", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    const first = notify(claim, "hello", "progress", "Starting");
    const second = notify(claim, "bye", "final", "All done");
    const again = notify(claim, "hello", "progress", "Starting again");
    expect([first.notificationId, second.notificationId, again.notificationId]).not.toContain(null);
    const rows = f.store.db.prepare(
      "SELECT node_id, notification_index, target_session_id, kind, message, state FROM " +
        "notifications ORDER BY created_at, rowid",
    ).all();
    expect(rows).toEqual([
      {
        node_id: "hello",
        notification_index: 1,
        target_session_id: SESSION,
        kind: "progress",
        message: "Starting",
        state: "pending",
      },
      {
        node_id: "bye",
        notification_index: 1,
        target_session_id: SESSION,
        kind: "final",
        message: "All done",
        state: "pending",
      },
      {
        node_id: "hello",
        notification_index: 2,
        target_session_id: SESSION,
        kind: "progress",
        message: "Starting again",
        state: "pending",
      },
    ]);
    // The attempt and its notification are one commit: the event names it.
    const event = f.store.db.prepare(
      "SELECT payload_json FROM events WHERE run_id = ? AND type = 'node.finished' ORDER BY seq LIMIT 1",
    ).get(runId) as { payload_json: string };
    expect(JSON.parse(event.payload_json).notificationId).toBe(first.notificationId);
  });

  it("of a headless run stay readable in status and are never claimed", () => {
    const runId = enqueue(f.store);
    const claim = launch(f.store, runId);
    notify(claim, "n", "final", "Report ready");
    expect(listRunNotifications(f.store, runId)).toEqual([
      expect.objectContaining({
        nodeId: "n",
        kind: "final",
        message: "Report ready",
        state: "pending",
        deliveredAt: null,
      }),
    ]);
    expect(claimNotifications(f.store, { sessionId: SESSION, holder: "a", limit: 10 }))
      .toEqual({ notifications: [], leased: [] });
  });

  it("are leased to one claimant; another sees them leased until the lease expires", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    const { notificationId: id } = notify(claim, "n", "progress", "Hi");
    const a = claimNotifications(f.store, { sessionId: SESSION, holder: "a", limit: 10 });
    expect(a.notifications.map((n) => [n.notificationId, n.workflowName, n.message])).toEqual([
      [id, "demo", "Hi"],
    ]);
    // The same request again (a resend after a lost answer) holds the same lease.
    expect(
      claimNotifications(f.store, { sessionId: SESSION, holder: "a", limit: 10 }).notifications,
    )
      .toHaveLength(1);
    const b = claimNotifications(f.store, { sessionId: SESSION, holder: "b", limit: 10 });
    expect(b).toEqual({ notifications: [], leased: [{ notificationId: id, runId }] });
    // Another session never sees them.
    expect(claimNotifications(f.store, { sessionId: "other", holder: "a", limit: 10 }))
      .toEqual({ notifications: [], leased: [] });
    f.clock.advance(OUTBOX_LEASE_MS + 1);
    expect(
      claimNotifications(f.store, { sessionId: SESSION, holder: "b", limit: 10 }).notifications,
    )
      .toHaveLength(1);
  });

  it("keep their order after a claimant died: a later one waits behind a leased one", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    const first = notify(claim, "n1", "progress", "first").notificationId;
    // Pi claimed the first, then died before showing or recording it; the run went on.
    claimNotifications(f.store, { sessionId: SESSION, holder: "dead", limit: 10 });
    const second = notify(claim, "n2", "progress", "second").notificationId;
    const restarted = claimNotifications(f.store, { sessionId: SESSION, holder: "b", limit: 10 });
    expect(restarted).toEqual({ notifications: [], leased: [{ notificationId: first, runId }] });
    // Once the dead lease lapses the new process gets both, oldest first.
    f.clock.advance(OUTBOX_LEASE_MS + 1);
    expect(
      claimNotifications(f.store, { sessionId: SESSION, holder: "b", limit: 10 }).notifications
        .map((n) => n.notificationId),
    ).toEqual([first, second]);
  });

  it("after an adopted one, the next is claimed in order", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    const first = notify(claim, "n1", "progress", "first").notificationId!;
    claimNotifications(f.store, { sessionId: SESSION, holder: "dead", limit: 10 });
    const second = notify(claim, "n2", "progress", "second").notificationId;
    expect(claimNotifications(f.store, { sessionId: SESSION, holder: "b", limit: 10 }).leased)
      .toEqual([{ notificationId: first, runId }]);
    // The dead process had shown it: the new one finds it on the branch and records it.
    deliverNotification(f.store, {
      notificationId: first,
      sessionId: SESSION,
      sessionEntryId: "entry-1",
    });
    expect(
      claimNotifications(f.store, { sessionId: SESSION, holder: "b", limit: 10 }).notifications
        .map((n) => n.notificationId),
    ).toEqual([second]);
  });

  it("deliver records the entry once; the same entry is adopted, another refused", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    const { notificationId } = notify(claim, "n", "progress", "Hi");
    const id = notificationId!;
    claimNotifications(f.store, { sessionId: SESSION, holder: "a", limit: 10 });
    f.clock.advance(5);
    const first = deliverNotification(f.store, {
      notificationId: id,
      sessionId: SESSION,
      sessionEntryId: "e1",
    });
    expect(first).toEqual({
      outcome: "accepted",
      body: { notificationId: id, sessionEntryId: "e1", deliveredAt: f.clock.now() },
    });
    // A restarted Pi (no lease) adopting its own entry.
    expect(
      deliverNotification(f.store, { notificationId: id, sessionId: SESSION, sessionEntryId: "e1" })
        .outcome,
    )
      .toBe("adopted");
    expect(
      refusal(() =>
        deliverNotification(f.store, {
          notificationId: id,
          sessionId: SESSION,
          sessionEntryId: "e2",
        })
      ),
    ).toEqual({ outcome: "conflict", code: "alreadyDelivered" });
    expect(
      refusal(() =>
        deliverNotification(f.store, {
          notificationId: id,
          sessionId: "other",
          sessionEntryId: "e1",
        })
      ),
    ).toEqual({ outcome: "rejected", code: "wrongSession" });
    expect(
      refusal(() =>
        deliverNotification(f.store, {
          notificationId: "nope",
          sessionId: SESSION,
          sessionEntryId: "e1",
        })
      ),
    ).toEqual({ outcome: "notFound", code: "notificationNotFound" });
    expect(claimNotifications(f.store, { sessionId: SESSION, holder: "c", limit: 10 }))
      .toEqual({ notifications: [], leased: [] });
    expect(listRunNotifications(f.store, runId)[0]).toMatchObject({
      state: "delivered",
      deliveredAt: f.clock.now(),
    });
  });
});

describe("completion presentation", () => {
  it("is ineligible before the terminal commit and eligible in it", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    expect(requestPresentation(f.store, claim, { prompt: "Summarize" }).recorded).toBe(true);
    // A retried proposal (the same run completing again after a crash) records no second one.
    requestPresentation(f.store, claim, { prompt: "Summarize!" });
    const intents = () =>
      f.store.db.prepare("SELECT intent_id, cause, eligible_at, facts_json FROM turn_intents")
        .all() as {
          intent_id: string;
          cause: string;
          eligible_at: number | null;
          facts_json: string;
        }[];
    expect(intents()).toEqual([{
      intent_id: turnIntentId(runId, "presentation"),
      cause: "presentation",
      eligible_at: null,
      facts_json: '{"prompt":"Summarize!"}',
    }]);
    expect(claimTurn(f.store, { sessionId: SESSION, holder: "a" })).toEqual({
      turn: null,
      leased: [],
    });
    f.clock.advance(3);
    completeRun(f.store, claim, { output: { ok: true } });
    expect(intents()[0].eligible_at).toBe(f.clock.now());
    const { turn } = claimTurn(f.store, { sessionId: SESSION, holder: "a" });
    expect(turn).toMatchObject({
      runId,
      cause: "presentation",
      turnIntentId: turnIntentId(runId, "presentation"),
    });
    expect(readTurnRunFacts(f.store, runId)).toMatchObject({
      state: "completed",
      output: { ok: true },
    });
  });

  it("is not recorded for a headless run", () => {
    const runId = enqueue(f.store);
    const claim = launch(f.store, runId);
    expect(requestPresentation(f.store, claim, { prompt: "x" }).recorded).toBe(false);
    completeRun(f.store, claim, { output: 1 });
    expect(f.store.db.prepare("SELECT COUNT(*) AS n FROM turn_intents").get()).toEqual({ n: 0 });
  });

  it("is superseded by a user turn after it became due, and by a newer run", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    requestPresentation(f.store, claim, { prompt: "p" });
    completeRun(f.store, claim, { output: 1 });
    const due = f.clock.now();
    // A user turn before it became due does not supersede it.
    expect(claimTurn(f.store, { sessionId: SESSION, holder: "a", userTurnAt: due - 1 }).turn).not
      .toBeNull();
    f.clock.advance(OUTBOX_LEASE_MS + 1);
    expect(claimTurn(f.store, { sessionId: SESSION, holder: "b", userTurnAt: due + 1 }).turn)
      .toBeNull();
    expect(resolution(turnIntentId(runId, "presentation"))).toBe("superseded");

    const second = enqueue(f.store, interactive());
    const claim2 = launch(f.store, second);
    requestPresentation(f.store, claim2, { prompt: "p" });
    completeRun(f.store, claim2, { output: 2 });
    enqueue(f.store, interactive());
    expect(resolution(turnIntentId(second, "presentation"))).toBe("superseded");
    expect(claimTurn(f.store, { sessionId: SESSION, holder: "c" }).turn).toBeNull();
  });
});

function resolution(intentId: string): string | null {
  return (f.store.db.prepare("SELECT resolution FROM turn_intents WHERE intent_id = ?").get(
    intentId,
  ) as {
    resolution: string | null;
  }).resolution;
}

describe("checkpoint presentation", () => {
  /** The run's next attempt waits at checkpoint `ask`, presented with `presentation`. */
  function waitAt(claim: Claim, attemptId: string, presentation?: WaitingPresentation) {
    recordNodeStarted(f.store, claim, {
      attemptId,
      nodeId: "ask",
      nodeKind: "checkpoint",
      effect: "pure",
      deadlineAt: null,
    });
    waitRun(f.store, claim, {
      attemptId,
      nodeId: "ask",
      kind: "checkpoint",
      request: { summary: "Ship it?" },
      ...(presentation ? { presentation } : {}),
    });
  }
  const answer = (runId: string, attemptId: string) =>
    answerDecision(f.store, {
      runId,
      nodeId: "ask",
      attemptId,
      kind: "checkpoint",
      answer: { ok: true },
      ownerId: HOST,
    });
  const intents = (runId: string) =>
    f.store.db.prepare(
      "SELECT intent_id, source_attempt_id AS attempt, eligible_at IS NOT NULL AS eligible, " +
        "resolution, facts_json AS facts FROM turn_intents WHERE run_id = ? ORDER BY rowid",
    ).all(runId);

  it("is eligible in the commit that parks the run, once per wait; an answer closes an unshown one", () => {
    const runId = enqueue(f.store, interactive());
    // A turn already due (a stranded step's fallback) is covered by the presentation.
    writeTransaction(
      f.store,
      () => recordStrandedTurnInTx(f.store, runId, "timedOut", "att-0", f.clock.now()),
    );
    waitAt(launch(f.store, runId), "a1", { prompt: "Ask whether to ship" });
    const first = turnIntentId(runId, "presentation", "a1");
    expect(intents(runId)).toEqual([
      expect.objectContaining({ attempt: "att-0", resolution: "superseded" }),
      {
        intent_id: first,
        attempt: "a1",
        eligible: 1,
        resolution: null,
        facts: '{"prompt":"Ask whether to ship","waitingOn":"ask"}',
      },
    ]);
    const turn = claimTurn(f.store, { sessionId: SESSION, holder: "a" }).turn!;
    expect(turn).toMatchObject({ turnIntentId: first, cause: "presentation" });
    expect(readTurnRunFacts(f.store, runId)?.waiting).toEqual({
      kind: "checkpoint",
      nodeId: "ask",
      request: { summary: "Ship it?" },
    });
    resolveTurn(f.store, { turnIntentId: first, sessionId: SESSION, sessionEntryId: "e1" });
    // Answered, the run waits there again (a loop): a new attempt, its own presentation, which
    // the next answer closes before any session took it.
    answer(runId, "a1");
    endLiveEpoch();
    waitAt(launch(f.store, runId), "a2", { problem: "presentationPrompt failed: boom" });
    const second = turnIntentId(runId, "presentation", "a2");
    expect(intents(runId).slice(1).map((i) => (i as { resolution: string | null }).resolution))
      .toEqual(["presentation", null]);
    answer(runId, "a2");
    expect(resolution(second)).toBe("superseded");
    // The run then fails: its own fallback, not a stale presentation.
    endLiveEpoch();
    failRun(f.store, launch(f.store, runId), { error: { code: "boom", message: "m" } });
    expect(claimTurn(f.store, { sessionId: SESSION, holder: "a" }).turn?.cause).toBe("failed");
  });

  it("is not recorded for a headless run, nor without a presentation", () => {
    const headless = enqueue(f.store);
    waitAt(launch(f.store, headless), "h1", { prompt: "p" });
    const plain = enqueue(f.store, interactive());
    waitAt(launch(f.store, plain), "p1");
    expect(f.store.db.prepare("SELECT COUNT(*) AS n FROM turn_intents").get()).toEqual({ n: 0 });
  });
});

describe("successor turns", () => {
  it("a failed run gets one eligible fallback; a run that failed before any attempt a launchFailed one", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    recordNodeStarted(f.store, claim, {
      attemptId: "a1",
      nodeId: "n",
      nodeKind: "compute",
      effect: "pure",
      deadlineAt: null,
    });
    failRun(f.store, claim, { error: { code: "boom", message: "It broke" } });
    const failed = claimTurn(f.store, { sessionId: SESSION, holder: "a" }).turn!;
    expect(failed).toMatchObject({ turnIntentId: turnIntentId(runId, "failed"), cause: "failed" });

    const other = enqueue(f.store, interactive("session-2"));
    failRun(f.store, launch(f.store, other), { error: { code: "workerCrashed", message: "x" } });
    expect(claimTurn(f.store, { sessionId: "session-2", holder: "a" }).turn?.cause).toBe(
      "launchFailed",
    );

    const timedOut = enqueue(f.store, interactive("session-3"));
    timeOutRun(f.store, launch(f.store, timedOut));
    expect(claimTurn(f.store, { sessionId: "session-3", holder: "a" }).turn?.cause).toBe(
      "timedOut",
    );

    // Headless runs owe no turn.
    const headless = enqueue(f.store);
    failRun(f.store, launch(f.store, headless), { error: { code: "e", message: "m" } });
    expect(
      f.store.db.prepare("SELECT COUNT(*) AS n FROM turn_intents WHERE run_id = ?").get(headless),
    )
      .toEqual({ n: 0 });
  });

  it("a stranded step becomes eligible when the run ends, and is the one turn of that ending", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    writeTransaction(
      f.store,
      () => recordStrandedTurnInTx(f.store, runId, "timedOut", "att-7", f.clock.now()),
    );
    writeTransaction(
      f.store,
      () => recordStrandedTurnInTx(f.store, runId, "timedOut", "att-7", f.clock.now()),
    );
    expect(claimTurn(f.store, { sessionId: SESSION, holder: "a" }).turn).toBeNull();
    timeOutRun(f.store, claim);
    const rows = f.store.db.prepare(
      "SELECT intent_id, eligible_at IS NOT NULL AS eligible FROM turn_intents",
    ).all();
    expect(rows).toEqual([{ intent_id: turnIntentId(runId, "timedOut", "att-7"), eligible: 1 }]);
  });

  it("a step timed out under the model: the next step prompt is its successor, or the run's end", () => {
    const step = (claim: Claim, runId: string, deadlineAt: number) => {
      const attemptId = f.store.ids.next("attempt");
      recordNodeStarted(f.store, claim, {
        attemptId,
        nodeId: "ask",
        nodeKind: "agent",
        effect: "pure",
        deadlineAt,
      });
      const contract = buildStepContract({
        kind: "agent",
        runId,
        workflowName: "demo",
        nodeId: "ask",
        attemptId,
        prompt: "Do it",
        expectedOutput: null,
        statusDetail: null,
        deadlineAt,
      });
      const { interactionId } = requestInteraction(f.store, claim, {
        attemptId,
        nodeId: "ask",
        kind: "agent",
        contract: contract as never,
        deadlineAt,
      });
      return { attemptId, interactionId };
    };
    const relaunch = (runId: string) => {
      endLiveEpoch();
      return launch(f.store, runId);
    };
    const runId = enqueue(f.store, interactive());
    const first = step(launch(f.store, runId), runId, f.clock.now() + 1_000);
    f.clock.advance(1_001);
    timeOutInteraction(f.store, { interactionId: first.interactionId, ownerId: HOST, ttlMs: 1 });
    const stranded = turnIntentId(runId, "timedOut", first.attemptId);
    expect(resolution(stranded)).toBeNull();
    expect(claimTurn(f.store, { sessionId: SESSION, holder: "a" }).turn).toBeNull();
    // The run routes on to another step: its prompt is the successor.
    const claim = relaunch(runId);
    const second = step(claim, runId, f.clock.now() + 1_000);
    expect(resolution(stranded)).toBe("workflowPrompt");
    // That step times out too and the run ends: one fallback, the second stranded intent.
    f.clock.advance(1_001);
    timeOutInteraction(f.store, { interactionId: second.interactionId, ownerId: HOST, ttlMs: 1 });
    timeOutRun(f.store, relaunch(runId));
    expect(claimTurn(f.store, { sessionId: SESSION, holder: "a" }).turn?.turnIntentId)
      .toBe(turnIntentId(runId, "timedOut", second.attemptId));
    expect(f.store.db.prepare("SELECT COUNT(*) AS n FROM turn_intents WHERE run_id = ?").get(runId))
      .toEqual({ n: 2 });
  });

  it("a run waiting for an answer releases the stranded turn; the turn covers it once", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    writeTransaction(
      f.store,
      () => recordStrandedTurnInTx(f.store, runId, "timedOut", "att-1", f.clock.now()),
    );
    recordNodeStarted(f.store, claim, {
      attemptId: "a2",
      nodeId: "ask",
      nodeKind: "checkpoint",
      effect: "pure",
      deadlineAt: null,
    });
    waitRun(f.store, claim, { attemptId: "a2", nodeId: "ask", kind: "checkpoint", request: null });
    const turn = claimTurn(f.store, { sessionId: SESSION, holder: "a" }).turn!;
    expect(turn.turnIntentId).toBe(turnIntentId(runId, "timedOut", "att-1"));
    expect(readTurnRunFacts(f.store, runId)?.waiting).toEqual({
      kind: "checkpoint",
      nodeId: "ask",
      request: null,
    });
    expect(
      resolveTurn(f.store, {
        turnIntentId: turn.turnIntentId,
        sessionId: SESSION,
        sessionEntryId: "e1",
      }).body,
    )
      .toEqual({ turnIntentId: turn.turnIntentId, resolution: "fallback", sessionEntryId: "e1" });
    // Answered, the run goes on and fails: a new ending, a new turn.
    answerDecision(f.store, {
      runId,
      nodeId: "ask",
      attemptId: "a2",
      kind: "checkpoint",
      answer: 1,
      ownerId: HOST,
    });
    endLiveEpoch();
    failRun(f.store, launch(f.store, runId), { error: { code: "boom", message: "m" } });
    expect(claimTurn(f.store, { sessionId: SESSION, holder: "a" }).turn?.cause).toBe("failed");
  });

  it("a presentation covers a stranded turn still waiting for delivery", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    writeTransaction(
      f.store,
      () => recordStrandedTurnInTx(f.store, runId, "timedOut", "att-1", f.clock.now()),
    );
    requestPresentation(f.store, claim, { prompt: "p" });
    completeRun(f.store, claim, { output: 1 });
    const turn = claimTurn(f.store, { sessionId: SESSION, holder: "a" }).turn!;
    expect(turn.cause).toBe("presentation");
    resolveTurn(f.store, {
      turnIntentId: turn.turnIntentId,
      sessionId: SESSION,
      sessionEntryId: "e1",
    });
    expect(resolution(turnIntentId(runId, "timedOut", "att-1"))).toBe("presentation");
    expect(claimTurn(f.store, { sessionId: SESSION, holder: "a" }).turn).toBeNull();
  });

  it("a user's cancel is quiet: pending intents are superseded", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    writeTransaction(
      f.store,
      () => recordStrandedTurnInTx(f.store, runId, "timedOut", "att-1", f.clock.now()),
    );
    cancelRun(f.store, { runId, claim });
    expect(resolution(turnIntentId(runId, "timedOut", "att-1"))).toBe("superseded");
    expect(claimTurn(f.store, { sessionId: SESSION, holder: "a" }).turn).toBeNull();
  });

  it("resolve: leases, adoption, refusals", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    requestPresentation(f.store, claim, { prompt: "p" });
    const id = turnIntentId(runId, "presentation");
    expect(
      refusal(() =>
        resolveTurn(f.store, { turnIntentId: id, sessionId: SESSION, sessionEntryId: "e1" })
      ),
    )
      .toEqual({ outcome: "rejected", code: "notEligible" });
    completeRun(f.store, claim, { output: 1 });
    expect(claimTurn(f.store, { sessionId: SESSION, holder: "a" }).turn?.turnIntentId).toBe(id);
    expect(claimTurn(f.store, { sessionId: SESSION, holder: "b" })).toEqual({
      turn: null,
      leased: [{ turnIntentId: id, runId }],
    });
    expect(
      refusal(() =>
        resolveTurn(f.store, { turnIntentId: id, sessionId: "other", sessionEntryId: "e1" })
      ),
    )
      .toEqual({ outcome: "rejected", code: "wrongSession" });
    // Another claimant (a restarted Pi that found the entry on its branch) may resolve it.
    expect(
      resolveTurn(f.store, { turnIntentId: id, sessionId: SESSION, sessionEntryId: "e1" }).outcome,
    )
      .toBe("accepted");
    expect(
      resolveTurn(f.store, { turnIntentId: id, sessionId: SESSION, sessionEntryId: "e1" }).outcome,
    )
      .toBe("adopted");
    expect(
      refusal(() =>
        resolveTurn(f.store, { turnIntentId: id, sessionId: SESSION, sessionEntryId: "e2" })
      ),
    )
      .toEqual({ outcome: "conflict", code: "alreadyResolved" });
    expect(
      refusal(() =>
        resolveTurn(f.store, { turnIntentId: "turn-x", sessionId: SESSION, sessionEntryId: "e" })
      ),
    )
      .toEqual({ outcome: "notFound", code: "turnNotFound" });
    expect(claimTurn(f.store, { sessionId: SESSION, holder: "b" })).toEqual({
      turn: null,
      leased: [],
    });
  });
});

describe("polling", () => {
  it("a session with nothing owed claims without a write transaction", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    notify(claim, "n", "progress", "Hi");
    completeRun(f.store, claim, { output: 1 });
    const statements: string[] = [];
    f.store.beforeStatement = (sql) => void statements.push(sql);
    expect(claimNotifications(f.store, { sessionId: "idle-session", holder: "a", limit: 10 }))
      .toEqual({ notifications: [], leased: [] });
    expect(claimTurn(f.store, { sessionId: "idle-session", holder: "a" }))
      .toEqual({ turn: null, leased: [] });
    f.store.beforeStatement = null;
    expect(statements.filter((sql) => /^BEGIN|^COMMIT/.test(sql))).toEqual([]);
  });
});

describe("invariants", () => {
  it("detect a checkpoint's presentation made eligible before its run waits there", () => {
    const runId = enqueue(f.store, interactive());
    launch(f.store, runId);
    writeTransaction(f.store, () => {
      f.store.db.prepare(
        "INSERT INTO turn_intents (intent_id, run_id, target_session_id, cause, " +
          "source_attempt_id, facts_json, eligible_at, state, created_at) VALUES " +
          "('t1', ?, ?, 'presentation', 'a9', '{}', 1, 'pending', 1)",
      ).run(runId, SESSION);
    });
    expect(checkInvariants(f.store).map((v) => v.code)).toContain("presentationBeforeWait");
    f.store.db.prepare("DELETE FROM turn_intents").run();
  });

  it("detect a presentation made eligible before its run completed", () => {
    const runId = enqueue(f.store, interactive());
    const claim = launch(f.store, runId);
    requestPresentation(f.store, claim, { prompt: "p" });
    f.store.db.prepare("UPDATE turn_intents SET eligible_at = 1").run();
    expect(checkInvariants(f.store).map((v) => v.code)).toContain("presentationBeforeCompletion");
    f.store.db.prepare("UPDATE turn_intents SET eligible_at = NULL").run();
  });
});

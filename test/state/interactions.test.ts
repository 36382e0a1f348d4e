/**
 * Interactive requests and submissions in the state layer: each transition in one transaction,
 * refusals that change nothing, stale verdicts fenced, and the invariants that watch them.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { buildStepContract } from "../../src/workflows/step-contract.ts";
import type { Claim } from "../../src/state/claims.ts";
import { AnswerRefusedError, RefusedError, TransitionError } from "../../src/state/errors.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import {
  currentSessionInteraction,
  listDueInteractions,
  readValidationJob,
  sessionCursor,
} from "../../src/state/interaction-queries.ts";
import { execute, queryOne } from "../../src/state/statements.ts";
import { readRunSpend } from "../../src/state/run-spend.ts";
import type { StepUsage } from "../../src/protocol/step-usage.ts";
import { recordNodeStarted } from "../../src/state/transitions/node-attempts.ts";
import {
  claimInteraction,
  claimInteractionLater,
  requestInteraction,
} from "../../src/state/transitions/interactions.ts";
import { presentInteraction } from "../../src/state/transitions/interaction-presentation.ts";
import { submitInteraction } from "../../src/state/transitions/interaction-tool-calls.ts";
import {
  acceptSubmission,
  rejectSubmission,
  remindInteraction,
  timeOutInteraction,
} from "../../src/state/transitions/interaction-verdicts.ts";
import { answerDecision } from "../../src/state/transitions/decisions.ts";
import { cancelRun, resumeRun } from "../../src/state/transitions/run-commands.ts";
import {
  enqueue,
  type Fixture,
  HOST,
  launch,
  openFixture,
  pairOf,
  snapshot,
} from "../support/state-store.ts";

let fx: Fixture;
beforeEach(() => (fx = openFixture()));
afterEach(() => fx.close());

const SESSION = "session-1";

/** An interactive run waiting at a model step; returns ids. */
function waitingStep(deadlineAt: number | null = null) {
  const runId = enqueue(fx.store, {
    binding: { executionMode: "interactive", originSessionId: SESSION },
  });
  const claim: Claim = launch(fx.store, runId);
  const attemptId = fx.store.ids.next("attempt");
  recordNodeStarted(fx.store, claim, {
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
  const { interactionId } = requestInteraction(fx.store, claim, {
    attemptId,
    nodeId: "ask",
    kind: "agent",
    contract: contract as never,
    deadlineAt,
  });
  return { runId, attemptId, interactionId, claim };
}

function submit(
  step: ReturnType<typeof waitingStep>,
  key: string,
  submission: unknown = 1,
  usage?: StepUsage,
) {
  return submitInteraction(fx.store, {
    runId: step.runId,
    interactionId: step.interactionId,
    sessionId: SESSION,
    nodeId: "ask",
    attemptId: step.attemptId,
    idempotencyKey: key,
    submission: submission as never,
    ...(usage ? { usage } : {}),
  });
}

describe("interactive requests", () => {
  it("parks the run waiting with the request and releases the claim", () => {
    const step = waitingStep();
    expect(pairOf(fx.store, step.runId)).toBe("waiting/parked");
    const current = claimInteraction(fx.store, SESSION)!;
    expect(current.request).toMatchObject({ request_id: step.interactionId, status: "pending" });
    expect(current.request.claimed_at).not.toBeNull();
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("words refusals of a run waiting at a Pi step: no answer is due; it reruns from Pi", () => {
    const step = waitingStep();
    const answer = () =>
      answerDecision(fx.store, {
        runId: step.runId,
        nodeId: "ask",
        attemptId: step.attemptId,
        kind: "checkpoint",
        answer: { go: true },
        ownerId: HOST,
      });
    expect(answer).toThrow(AnswerRefusedError);
    expect(answer).toThrow(
      new RegExp(
        `^Answer refused: run ${step.runId} is not waiting for an answer: it waits for a Pi step, not an answer$`,
      ),
    );
    cancelRun(fx.store, { runId: step.runId, claim: null });
    const resume = () => resumeRun(fx.store, { runId: step.runId });
    expect(resume).toThrow(TransitionError);
    expect(resume).toThrow(
      `it has ended (cancelled) and does not run again; '/workflow rerun ${step.runId}' from a Pi session starts a new run from it`,
    );
  });

  it("records a claim answered before its commit in a commit not synced", () => {
    const step = waitingStep();
    fx.store.db.exec("PRAGMA synchronous = FULL");
    const { current, record } = claimInteractionLater(fx.store, SESSION);
    const claimedAt = () =>
      queryOne<{ claimed_at: number | null }>(
        fx.store,
        "SELECT claimed_at FROM interactive_requests WHERE request_id = :id",
        { id: step.interactionId },
      )!.claimed_at;
    expect(current!.request.claimed_at).not.toBeNull();
    expect(claimedAt()).toBeNull();
    const syncAtCommit: number[] = [];
    fx.store.beforeStatement = (sql) => {
      if (sql !== "COMMIT") return;
      const row = fx.store.db.prepare("PRAGMA synchronous").get() as { synchronous: number };
      syncAtCommit.push(row.synchronous);
    };
    record();
    expect(syncAtCommit).toEqual([1]);
    expect(claimedAt()).toBe(current!.request.claimed_at);
    expect(claimInteraction(fx.store, SESSION)!.request.claimed_at).toBe(claimedAt());
  });

  it("records the claim of interaction.claim, which answers after its commit, synced", () => {
    const step = waitingStep();
    fx.store.db.exec("PRAGMA synchronous = FULL");
    const syncAtCommit: number[] = [];
    fx.store.beforeStatement = (sql) => {
      if (sql !== "COMMIT") return;
      const row = fx.store.db.prepare("PRAGMA synchronous").get() as { synchronous: number };
      syncAtCommit.push(row.synchronous);
    };
    const current = claimInteraction(fx.store, SESSION)!;
    expect(current.request).toMatchObject({ request_id: step.interactionId });
    expect(syncAtCommit).toEqual([2]);
  });

  it("refuses a request on a headless run and a deadline that differs from node.started", () => {
    const runId = enqueue(fx.store);
    const claim = launch(fx.store, runId);
    recordNodeStarted(fx.store, claim, {
      attemptId: "a-1",
      nodeId: "ask",
      nodeKind: "agent",
      effect: "pure",
      deadlineAt: 5,
    });
    const before = snapshot(fx.store);
    const ask = (deadlineAt: number | null) => () =>
      requestInteraction(fx.store, claim, {
        attemptId: "a-1",
        nodeId: "ask",
        kind: "agent",
        contract: {},
        deadlineAt,
      });
    expect(ask(5)).toThrow(/not interactive/);
    expect(ask(6)).toThrow(/deadline differs/);
    expect(snapshot(fx.store)).toBe(before);
  });

  it("orders a session's requests by creation and presents one at a time", () => {
    const first = waitingStep();
    // A second run of the same session cannot exist (reservation), so enqueue refuses it.
    expect(() =>
      enqueue(fx.store, { binding: { executionMode: "interactive", originSessionId: SESSION } })
    ).toThrow(RefusedError);
    expect(currentSessionInteraction(fx.store, SESSION)?.waiting).toBe(0);
    const cursor = sessionCursor(fx.store, SESSION);
    presentInteraction(fx.store, {
      runId: first.runId,
      interactionId: first.interactionId,
      sessionId: SESSION,
      sessionEntryId: "e1",
    });
    expect(sessionCursor(fx.store, SESSION)).toBe(cursor + 1);
  });
});

describe("submissions and verdicts", () => {
  it("accepts exactly once and makes the run launchable", () => {
    const step = waitingStep();
    const sub = submit(step, "k1");
    expect(sub.kind).toBe("new");
    const id = sub.kind === "new" ? sub.submissionId : "";
    expect(() => submit(step, "k2", 2)).toThrow(/being validated/);
    const job = readValidationJob(fx.store, id)!;
    expect(job).toMatchObject({ nodeId: "ask", attemptId: step.attemptId, submission: 1 });
    expect(acceptSubmission(fx.store, { submissionId: id, generation: job.generation, output: 9 }))
      .not.toBeNull();
    expect(pairOf(fx.store, step.runId)).toBe("running/parked");
    // A second verdict for the same submission is stale.
    expect(rejectSubmission(fx.store, {
      submissionId: id,
      generation: job.generation,
      error: { code: "x", message: "y" },
    })).toBeNull();
    expect(submit(step, "k1")).toMatchObject({ kind: "existing" });
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("attaches a new tool call with the same output to the submission being validated", () => {
    const step = waitingStep();
    // As the host calls it: each call records its receipt under the tool-call id.
    const call = (key: string, submission: unknown, requestId: string) =>
      submitInteraction(fx.store, {
        runId: step.runId,
        interactionId: step.interactionId,
        sessionId: SESSION,
        nodeId: "ask",
        attemptId: step.attemptId,
        idempotencyKey: key,
        submission: submission as never,
        receipt: {
          requestId,
          clientId: "client-1",
          operation: "interaction.submit",
          idempotencyKey: key,
          requestFingerprint: requestId,
        },
      });
    const first = call("k1", { a: 1 }, "r1");
    expect(first.kind).toBe("new");
    const id = first.kind === "new" ? first.submissionId : "";
    const revision = first.revision;
    // The model asks again for the verdict with a new tool-call id: the same submission, no
    // second validation, no new event.
    const again = call("k2", { a: 1 }, "r2");
    expect(again).toMatchObject({ kind: "attached", revision, submission: { submission_id: id } });
    expect(call("k3", { a: 1 }, "r3")).toMatchObject({ submission: { submission_id: id } });
    const other = () => call("k4", { a: 2 }, "r4");
    expect(other).toThrow(/still being validated: call submit again with that same output/);
    expect(() => call("k2", { a: 2 }, "r5")).toThrow(/already submitted another output/);
    const job = readValidationJob(fx.store, id)!;
    rejectSubmission(fx.store, {
      submissionId: id,
      generation: job.generation,
      error: { code: "validationFailed", message: "stopped" },
    });
    // The attached tool-call id keeps its answer once the verdict is in.
    expect(call("k2", { a: 1 }, "r6")).toMatchObject({
      kind: "existing",
      submission: { submission_id: id, outcome: "rejected" },
    });
    // A new tool call after the verdict is a new submission (the request is still pending).
    const retry = call("k5", { a: 1 }, "r7");
    expect(retry.kind).toBe("new");
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("fences a verdict from before a deadline's control claim", () => {
    const step = waitingStep(fx.clock.now() + 1_000);
    const sub = submit(step, "k1");
    const id = sub.kind === "new" ? sub.submissionId : "";
    const job = readValidationJob(fx.store, id)!;
    fx.clock.advance(1_001);
    expect(listDueInteractions(fx.store, fx.clock.now(), 10)).toHaveLength(1);
    expect(
      timeOutInteraction(fx.store, { interactionId: step.interactionId, ownerId: HOST, ttlMs: 1 }),
    )
      .not.toBeNull();
    expect(acceptSubmission(fx.store, { submissionId: id, generation: job.generation, output: 1 }))
      .toBeNull();
    expect(pairOf(fx.store, step.runId)).toBe("running/parked");
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("counts reminders and fails the attempt after the last", () => {
    const step = waitingStep();
    const remind = (reminder: number) =>
      remindInteraction(fx.store, {
        runId: step.runId,
        interactionId: step.interactionId,
        sessionId: SESSION,
        reminder,
        reminderText: (n) => `r${n}`,
      });
    expect(remind(1).body).toMatchObject({ action: "remind", message: "r1" });
    expect(() => remind(3)).toThrow(/does not follow/);
    remind(2);
    expect(remind(3).result).toMatchObject({ action: "failed" });
    expect(pairOf(fx.store, step.runId)).toBe("running/parked");
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("sets the step's usage with a reminder and a submission, never lowers it, keeps it on accept", () => {
    const step = waitingStep();
    const used = (calls: number) => ({
      input: 100 * calls,
      output: 10 * calls,
      cacheRead: 0,
      cacheWrite: 0,
      cost: 0.001 * calls,
      provider: "fake",
      model: "m",
    });
    const tokens = () =>
      queryOne<{ usage_tokens: number | null; usage_cost: number | null }>(
        fx.store,
        "SELECT usage_tokens, usage_cost FROM node_attempts WHERE attempt_id = :id",
        { id: step.attemptId },
      );
    remindInteraction(fx.store, {
      runId: step.runId,
      interactionId: step.interactionId,
      sessionId: SESSION,
      reminder: 1,
      reminderText: (n) => `r${n}`,
      usage: used(1),
    });
    expect(tokens()).toEqual({ usage_tokens: 110, usage_cost: 0.001 });
    const sub = submit(step, "k1", 1, used(3));
    expect(tokens()).toEqual({ usage_tokens: 330, usage_cost: 0.003 });
    // A late request with an older sum changes nothing (here: the same output, attached).
    submit(step, "k2", 1, used(2));
    expect(tokens()).toEqual({ usage_tokens: 330, usage_cost: 0.003 });
    const id = sub.kind === "new" ? sub.submissionId : "";
    const job = readValidationJob(fx.store, id)!;
    acceptSubmission(fx.store, { submissionId: id, generation: job.generation, output: 9 });
    expect(tokens()).toEqual({ usage_tokens: 330, usage_cost: 0.003 });
    // The closing event carries the step's usage sums, as node.finished does (--wait shows it).
    const accepted = queryOne<{ payload_json: string }>(
      fx.store,
      "SELECT payload_json FROM events WHERE type = 'interaction.accepted' ORDER BY seq DESC",
    )!;
    expect(JSON.parse(accepted.payload_json).usage).toEqual({ cost: 0.003, tokens: 330 });
    expect(readRunSpend(fx.store, step.runId)).toEqual({ tokens: 330, cost: 0.003 });
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("cancel closes the request and its validating submission", () => {
    const step = waitingStep();
    submit(step, "k1");
    cancelRun(fx.store, { runId: step.runId, claim: null });
    expect(currentSessionInteraction(fx.store, SESSION)).toBeUndefined();
    expect(checkInvariants(fx.store)).toEqual([]);
  });
});

describe("invariants of interactive records", () => {
  it("reports requests and attempts that disagree", () => {
    const step = waitingStep();
    execute(fx.store, "UPDATE node_attempts SET state = 'ok' WHERE attempt_id = :id", {
      id: step.attemptId,
    });
    const codes = checkInvariants(fx.store).map((v) => v.code);
    expect(codes).toContain("pendingInteractionNotWaiting");
  });

  it("reports a validating submission of a closed request and a settled one without its submission", () => {
    const step = waitingStep();
    submit(step, "k1");
    execute(
      fx.store,
      "UPDATE interactive_requests SET status = 'settled' WHERE request_id = :id",
      { id: step.interactionId },
    );
    const codes = checkInvariants(fx.store).map((v) => v.code);
    expect(codes).toEqual(expect.arrayContaining([
      "validatingOnClosedInteraction",
      "settledInteractionMismatch",
      "closedInteractionStillWaiting",
    ]));
  });

  it("reports two active interactive runs of one session", () => {
    waitingStep();
    execute(
      fx.store,
      "INSERT INTO runs SELECT 'run-x', workflow_name, workflow_ref, title, 'queued', 0, NULL, " +
        "NULL, NULL, project_path, workflow_source_json, definition_digest, input_json, " +
        "input_hash, NULL, created_at, state_changed_at, NULL, NULL, NULL, NULL, " +
        "(SELECT MAX(run_no) + 1 FROM runs), NULL, NULL, NULL, NULL, NULL, NULL FROM runs LIMIT 1",
    );
    execute(
      fx.store,
      "INSERT INTO run_bindings (run_id, execution_mode, origin_session_id, created_at) " +
        "VALUES ('run-x', 'interactive', :s, 0)",
      { s: SESSION },
    );
    expect(checkInvariants(fx.store).map((v) => v.code)).toContain("sessionReservationExceeded");
  });
});

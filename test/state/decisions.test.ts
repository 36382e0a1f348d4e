import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fingerprint } from "../../src/protocol/canonical-json.ts";
import { findHostCommand } from "../../src/state/host-commands.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { hostStatusCounts, readRunFacts } from "../../src/state/queries.ts";
import { answerDecision } from "../../src/state/transitions/decisions.ts";
import { cancelRun, pauseRun, resumeRun } from "../../src/state/transitions/run-commands.ts";
import { nextLaunchableRuns } from "../../src/state/transitions/run-launch.ts";
import { waitRun } from "../../src/state/transitions/run-park.ts";
import {
  enqueue,
  expectRefused,
  type Fixture,
  HOST,
  launch,
  launchWithAttempt,
  openFixture,
  pairOf,
} from "./helpers.ts";

let f: Fixture;
beforeEach(() => {
  f = openFixture();
});
afterEach(() => {
  expect(checkInvariants(f.store)).toEqual([]);
  f.close();
});

function waiting(): { runId: string; attemptId: string; decisionId: string } {
  const runId = enqueue(f.store);
  const { claim, attemptId } = launchWithAttempt(f.store, runId);
  const { decisionId } = waitRun(f.store, claim, {
    attemptId,
    nodeId: "step",
    kind: "checkpoint",
    request: { question: "go?" },
  });
  f.store.db.exec("UPDATE run_workers SET status = 'exited' WHERE status IN ('starting', 'live')");
  return { runId, attemptId, decisionId };
}

describe("answerDecision()", () => {
  it("resolves the decision and makes the run launchable from the answered boundary", () => {
    const { runId, attemptId, decisionId } = waiting();
    const { revision } = answerDecision(f.store, {
      decisionId,
      answer: { go: true },
      receipt: {
        requestId: "answer-1",
        clientId: "cli",
        operation: "checkpoint.answer",
        requestFingerprint: fingerprint({ decisionId, go: true }),
      },
    });
    expect(pairOf(f.store, runId)).toBe("running/parked");
    expect(readRunFacts(f.store, runId).attempts).toMatchObject([
      { attemptId, state: "ok", output: { go: true } },
    ]);
    expect(findHostCommand(f.store, "answer-1")?.acceptedRevision).toBe(revision);
    expect(hostStatusCounts(f.store)).toMatchObject({ waiting: 0, pendingInteractions: 0 });
    expect(nextLaunchableRuns(f.store, 5).map((r) => r.runId)).toEqual([runId]);
    expect(launch(f.store, runId).generation).toBe(2);
  });

  it("refuses a second answer, an answer after cancel, and a stale revision", () => {
    const first = waiting();
    answerDecision(f.store, { decisionId: first.decisionId, answer: 1 });
    expectRefused(
      f.store,
      () => answerDecision(f.store, { decisionId: first.decisionId, answer: 2 }),
      /Cannot answer run .* in state running\/parked/,
    );
    const second = waiting();
    expect(() =>
      answerDecision(f.store, { decisionId: second.decisionId, answer: 1, expectedRevision: 1 })
    ).toThrow(/Revision conflict/);
    cancelRun(f.store, { runId: second.runId, ownerId: HOST });
    expectRefused(
      f.store,
      () => answerDecision(f.store, { decisionId: second.decisionId, answer: 1 }),
      /Cannot answer run .* cancelled/,
    );
    expect(() => answerDecision(f.store, { decisionId: "nope", answer: 1 })).toThrow(
      /Unknown decision: nope/,
    );
  });

  it("an answered paused run waits for resume before it launches", () => {
    const { runId, decisionId } = waiting();
    pauseRun(f.store, { runId, ownerId: HOST });
    answerDecision(f.store, { decisionId, answer: "later", resolution: "timeoutDefault" });
    expect(nextLaunchableRuns(f.store, 5)).toEqual([]);
    resumeRun(f.store, { runId });
    expect(nextLaunchableRuns(f.store, 5).map((r) => r.runId)).toEqual([runId]);
  });
});

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fingerprint } from "../../src/protocol/canonical-json.ts";
import { readLease, runResource } from "../../src/state/claims.ts";
import { ClaimLostError, RequestConflictError } from "../../src/state/errors.ts";
import { findHostCommand, findHostCommandByKey } from "../../src/state/host-commands.ts";
import { findMessageReceipt } from "../../src/state/message-receipts.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { hostStatusCounts, listEvents, readRun, readRunFacts } from "../../src/state/queries.ts";
import {
  recordNodeFailed,
  recordNodeFinished,
  recordNodeUpdate,
} from "../../src/state/transitions/node-attempts.ts";
import { cancelRun, pauseRun, resumeRun } from "../../src/state/transitions/run-commands.ts";
import { completeRun, failRun } from "../../src/state/transitions/run-end.ts";
import { nextLaunchableRuns } from "../../src/state/transitions/run-launch.ts";
import {
  enqueue,
  expectRefused,
  type Fixture,
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

const receipt = (requestId: string, operation: string, payload: unknown = {}) => ({
  requestId,
  clientId: "client-1",
  operation,
  requestFingerprint: fingerprint({ operation, payload }),
  receipt: { ok: true },
});

describe("commands with receipts", () => {
  it("pause/resume/cancel commit their receipt in the same transaction", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    const paused = pauseRun(f.store, { runId, claim, receipt: receipt("r1", "run.pause") });
    expect(paused.stopWorker).toBe(true);
    expect(pair(runId)).toBe("running/parked");
    expect(readRun(f.store, runId)?.paused).toBe(true);
    expect(readRunFacts(f.store, runId).attempts[0]).toMatchObject({
      attemptId,
      state: "interrupted",
    });
    expect(findHostCommand(f.store, "r1")).toMatchObject({
      outcome: "accepted",
      runId,
      acceptedRevision: paused.revision,
      receipt: { ok: true },
    });
    refused(
      () => pauseRun(f.store, { runId, claim: null }),
      /^Cannot pause run run-\S+: it is paused already$/,
    );
    // Same request id again: detectable both ways, and nothing changes.
    const before = snapshot(f.store);
    expect(() => resumeRun(f.store, { runId, receipt: receipt("r1", "run.pause") })).toThrow(
      RequestConflictError,
    );
    expect(() => resumeRun(f.store, { runId, receipt: receipt("r1", "run.resume") })).toThrow(
      /another payload/,
    );
    expect(snapshot(f.store)).toBe(before);
    resumeRun(f.store, { runId, receipt: receipt("r2", "run.resume") });
    expect(readRun(f.store, runId)?.paused).toBe(false);
    cancelRun(f.store, { runId, claim: null, receipt: receipt("r3", "run.cancel") });
    expect(pair(runId)).toBe("cancelled/cancelled");
    refused(
      () => cancelRun(f.store, { runId, claim: null }),
      /^Cannot cancel run run-\S+: it has ended \(cancelled\)$/,
    );
  });

  it("pause of a queued or waiting run keeps its state and skips it until resumed", () => {
    const runId = enqueue(f.store);
    const r = pauseRun(f.store, { runId, claim: null });
    expect([r.stopWorker, pair(runId)]).toEqual([false, "queued/queued"]);
    expect(nextLaunchableRuns(f.store, 5)).toEqual([]);
    expect(hostStatusCounts(f.store)).toMatchObject({ queued: 1, paused: 1 });
  });

  it("pause and cancel release only the exact own claim: a lookalike is refused", () => {
    const runId = enqueue(f.store);
    const { claim } = launchWithAttempt(f.store, runId);
    const before = snapshot(f.store);
    // Same owner, but another token or generation: not the claim the run holds.
    for (const lookalike of [{ ...claim, token: "other" }, { ...claim, generation: 99 }]) {
      expect(() => pauseRun(f.store, { runId, claim: lookalike })).toThrow(/ownerChanged/);
      expect(() => cancelRun(f.store, { runId, claim: lookalike })).toThrow(ClaimLostError);
    }
    expect(snapshot(f.store)).toBe(before);
    expect(pauseRun(f.store, { runId, claim }).stopWorker).toBe(true);
  });

  it("cancel of an expired running row takes a control claim; another host's live claim refuses", () => {
    const runId = enqueue(f.store);
    launchWithAttempt(f.store, runId);
    const before = snapshot(f.store);
    expect(() => cancelRun(f.store, { runId, claim: null })).toThrow(ClaimLostError);
    expect(() => pauseRun(f.store, { runId, claim: null })).toThrow(/ownerChanged/);
    expect(snapshot(f.store)).toBe(before);
    f.clock.advance(TTL);
    const generation = readLease(f.store, runResource(runId))!.generation;
    const result = cancelRun(f.store, { runId, claim: null });
    expect(result.stopWorker).toBe(true);
    expect(pair(runId)).toBe("cancelled/cancelled");
    const lease = readLease(f.store, runResource(runId))!;
    expect([lease.generation, lease.token_hash]).toEqual([generation + 1, null]);
    expect(readRunFacts(f.store, runId).attempts[0]?.state).toBe("cancelled");
  });
});

describe("worker message receipts and expected revisions", () => {
  it("stores the receipt with the change and refuses a stale expected revision", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    const revision = readRun(f.store, runId)!.revision;
    const before = snapshot(f.store);
    expect(() =>
      recordNodeUpdate(f.store, claim, {
        attemptId,
        type: "p",
        key: "k",
        data: 1,
        expectedRevision: revision - 1,
        receipt: receipt("m-1", "node.update"),
      })
    ).toThrow(/Revision conflict for run .*: expected \d+, found \d+/);
    expect(snapshot(f.store)).toBe(before);
    const done = recordNodeFinished(f.store, claim, {
      attemptId,
      output: "ok",
      expectedRevision: revision,
      receipt: { ...receipt("m-2", "node.finished"), receipt: (t) => ({ revision: t.revision }) },
    });
    // The receipt is the change's event: same revision, no receipts-table row.
    expect(findMessageReceipt(f.store, "m-2")).toMatchObject({
      runId,
      acceptedRevision: done.revision,
      receipt: { revision: done.revision },
    });
    expect(findHostCommand(f.store, "m-2")).toBeUndefined();
    expect(listEvents(f.store, runId).at(-1)).toMatchObject({
      seq: done.revision,
      type: "node.finished",
    });
    // A retried message with the same id cannot apply twice; another message under that id is
    // told apart from a retry.
    const retried = () =>
      completeRun(f.store, claim, { output: 1, receipt: receipt("m-2", "node.finished") });
    expect(retried).toThrow(RequestConflictError);
    expect(retried).toThrow(/already recorded/);
    expect(() =>
      completeRun(f.store, claim, { output: 1, receipt: receipt("m-2", "run.finished") })
    ).toThrow(/reused with another payload/);
    expect(pair(runId)).toBe("running/running");
    // The run's end keeps the receipt (it is part of the event) and stays consistent.
    const end = completeRun(f.store, claim, { output: 1, receipt: receipt("m-3", "run.finished") });
    expect(findMessageReceipt(f.store, "m-3")).toMatchObject({
      acceptedRevision: end.revision,
      receipt: { ok: true },
    });
    expect(findMessageReceipt(f.store, "m-2")?.acceptedRevision).toBe(done.revision);
    expect(checkInvariants(f.store)).toEqual([]);
  });

  it("finds an earlier command by client idempotency key", () => {
    const runId = enqueue(f.store, {
      receipt: { ...receipt("req-1", "run.start"), idempotencyKey: "key-1" },
    });
    expect(
      findHostCommandByKey(f.store, {
        clientId: "client-1",
        operation: "run.start",
        idempotencyKey: "key-1",
      }),
    ).toMatchObject({ requestId: "req-1", runId, acceptedRevision: 1 });
    expect(
      findHostCommandByKey(f.store, {
        clientId: "client-2",
        operation: "run.start",
        idempotencyKey: "key-1",
      }),
    ).toBeUndefined();
  });

  it("a resume of an ended run names a command the host accepts for it (host/run-rerun.ts)", () => {
    const resumeRefusal = (runId: string, pattern: RegExp) =>
      refused(() => resumeRun(f.store, { runId }), pattern);
    // Completed: no default node to rerun from, so the plain rerun would be refused.
    const done = enqueue(f.store);
    const ok = launchWithAttempt(f.store, done);
    recordNodeFinished(f.store, ok.claim, { attemptId: ok.attemptId, output: 1 });
    completeRun(f.store, ok.claim, { output: 1 });
    resumeRefusal(
      done,
      /^Cannot resume run \S+: it has ended \(completed\) and does not run again; 'pi-workflows rerun \S+ --from <node>' starts a new run from it$/,
    );
    // Failed after its node finished well (routing, its own limits): retry is refused there.
    const outside = enqueue(f.store);
    const fine = launchWithAttempt(f.store, outside);
    recordNodeFinished(f.store, fine.claim, { attemptId: fine.attemptId, output: 1 });
    failRun(f.store, fine.claim, { error: { code: "noRoute", message: "no edge matched" } });
    resumeRefusal(
      outside,
      /^Cannot resume run \S+: it has ended \(failed\) and does not run again; 'pi-workflows rerun \S+ --from <node>' starts/,
    );
    // Failed in a node: retry reruns that node.
    const inNode = enqueue(f.store);
    const bad = launchWithAttempt(f.store, inNode);
    const error = { code: "stepFailed", message: "it broke" };
    recordNodeFailed(f.store, bad.claim, { attemptId: bad.attemptId, outcome: "failed", error });
    failRun(f.store, bad.claim, { error });
    resumeRefusal(
      inNode,
      /; 'pi-workflows retry \S+' reruns it from the node that stopped it$/,
    );
    // Cancelled while queued: it ran no node, so no rerun of it is accepted.
    const queued = enqueue(f.store);
    cancelRun(f.store, { runId: queued, claim: null });
    resumeRefusal(
      queued,
      /it has ended \(cancelled\) and does not run again; it ran no node, so there is nothing to rerun: start its workflow again$/,
    );
  });

  it("refuses a pause whose expected revision moved", () => {
    const runId = enqueue(f.store);
    const before = snapshot(f.store);
    expect(() => pauseRun(f.store, { runId, claim: null, expectedRevision: 7 })).toThrow(
      /Revision conflict/,
    );
    expect(snapshot(f.store)).toBe(before);
  });
});

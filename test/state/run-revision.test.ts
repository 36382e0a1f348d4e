/**
 * The run revision is the seq of the run's newest event and its update time that event's `at`
 * (journal.ts `newestEventSql`): nothing stores them, so every reader must derive the same
 * figures, and a change that does not commit must leave both where they were.
 */
import { afterEach, describe, expect, it } from "vitest";
import { RevisionConflictError, TransitionError } from "../../src/state/errors.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { nextRevision } from "../../src/state/journal.ts";
import { readRunRow } from "../../src/state/protected-write.ts";
import { readRun, readRunStatus } from "../../src/state/queries.ts";
import { queryOne } from "../../src/state/statements.ts";
import { groupTransaction } from "../../src/state/transactions.ts";
import { completeRun } from "../../src/state/transitions/run-end.ts";
import { recordNodeUpdate } from "../../src/state/transitions/node-attempts.ts";
import { finishWorkerEpoch } from "../../src/state/transitions/workers.ts";
import { changedRunsSince, readRunRows } from "../../src/state/viewer-queries.ts";
import {
  enqueue,
  type Fixture,
  launch,
  launchWithAttempt,
  openFixture,
} from "../support/state-store.ts";

let fx: Fixture;
afterEach(() => fx?.close());

/** The revision and update time as every reader reports them (they must all agree). */
function seen(runId: string) {
  const view = readRun(fx.store, runId)!;
  const row = readRunRows(fx.store, [runId])[0];
  const status = readRunStatus(fx.store, runId)!;
  expect(row.revision).toBe(view.revision);
  expect(row.updatedAt).toBe(view.updatedAt);
  expect(status.run.revision).toBe(view.revision);
  expect(readRunRow(fx.store, runId)!.revision).toBe(view.revision);
  return { revision: view.revision, updatedAt: view.updatedAt };
}

function update(claim: Parameters<typeof recordNodeUpdate>[1], attemptId: string, key = "k") {
  return recordNodeUpdate(fx.store, claim, {
    attemptId,
    type: "progress",
    key,
    data: { progress: 0.5 },
  }).revision;
}

describe("run revision from the newest event", () => {
  it("is 1 at enqueue, with the run.queued event's time", () => {
    fx = openFixture();
    fx.clock.set(5_000);
    const runId = enqueue(fx.store);
    expect(seen(runId)).toEqual({ revision: 1, updatedAt: 5_000 });
    expect(readRun(fx.store, runId)!.createdAt).toBe(5_000);
    expect(nextRevision(fx.store, runId)).toBe(2);
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("moves with each committed change and shows that change's time", () => {
    fx = openFixture();
    const runId = enqueue(fx.store);
    const { claim, attemptId } = launchWithAttempt(fx.store, runId);
    const before = seen(runId).revision;
    fx.clock.advance(1_000);
    const at = fx.clock.now();
    expect(update(claim, attemptId)).toBe(before + 1);
    expect(seen(runId)).toEqual({ revision: before + 1, updatedAt: at });
    // A worker epoch's delta is no change of the run: revision and time stay.
    const epoch = queryOne<{ worker_epoch: string }>(
      fx.store,
      "SELECT worker_epoch FROM run_workers WHERE run_id = :runId",
      { runId },
    )!.worker_epoch;
    fx.clock.advance(1_000);
    finishWorkerEpoch(fx.store, {
      workerEpoch: epoch,
      status: "exited",
      exitCode: 0,
      signal: null,
      diagnosticHash: null,
    });
    expect(seen(runId)).toEqual({ revision: before + 1, updatedAt: at });
  });

  it("stays put after a refused write and a stale expected revision", () => {
    fx = openFixture();
    const runId = enqueue(fx.store);
    const { claim, attemptId } = launchWithAttempt(fx.store, runId);
    const before = seen(runId);
    fx.clock.advance(1_000);
    expect(() => update(claim, "attempt-unknown")).toThrow(TransitionError);
    expect(() =>
      recordNodeUpdate(fx.store, claim, {
        attemptId,
        type: "progress",
        key: "k",
        data: {},
        expectedRevision: before.revision - 1,
      })
    ).toThrow(RevisionConflictError);
    expect(seen(runId)).toEqual(before);
    // The next change takes the very next revision (no gap), with the current one expected.
    const next = recordNodeUpdate(fx.store, claim, {
      attemptId,
      type: "progress",
      key: "k",
      data: {},
      expectedRevision: before.revision,
    }).revision;
    expect(next).toBe(before.revision + 1);
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("in a group commit, a write rolled back to its savepoint leaves no revision behind", () => {
    fx = openFixture();
    const a = enqueue(fx.store);
    const b = enqueue(fx.store);
    const wa = launchWithAttempt(fx.store, a);
    const wb = launchWithAttempt(fx.store, b);
    const ra = seen(a).revision;
    const rb = seen(b).revision;
    const revisions = groupTransaction(fx.store, () => {
      const first = update(wa.claim, wa.attemptId, "k1");
      // Its own savepoint rolls back; the group goes on.
      expect(() => update(wb.claim, "attempt-unknown")).toThrow(TransitionError);
      const second = update(wa.claim, wa.attemptId, "k2");
      const third = update(wb.claim, wb.attemptId);
      return [first, second, third];
    });
    expect(revisions).toEqual([ra + 1, ra + 2, rb + 1]);
    expect(seen(a).revision).toBe(ra + 2);
    expect(seen(b).revision).toBe(rb + 1);
    expect(changedRunsSince(fx.store, 0).runIds.sort()).toEqual([a, b].sort());
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("takes no new revision once the run is terminal", () => {
    fx = openFixture();
    const runId = enqueue(fx.store);
    const claim = launch(fx.store, runId);
    fx.clock.advance(1_000);
    const { revision } = completeRun(fx.store, claim, { output: 1 });
    expect(seen(runId)).toEqual({ revision, updatedAt: fx.clock.now() });
    expect(() => nextRevision(fx.store, runId)).toThrow(TransitionError);
    expect(seen(runId).revision).toBe(revision);
    expect(checkInvariants(fx.store)).toEqual([]);
  });
});

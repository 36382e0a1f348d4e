import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readLease, runResource } from "../../src/state/claims.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { hostStatusCounts, readRun } from "../../src/state/queries.ts";
import { nextLaunchableRuns } from "../../src/state/transitions/run-launch.ts";
import { interruptRun, recoverExpiredRun } from "../../src/state/transitions/run-recovery.ts";
import {
  enqueue,
  expectRefused,
  type Fixture,
  HOST,
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

describe("recoverExpiredRun()", () => {
  it("interrupts a pure attempt and parks the run for a new launch", () => {
    const runId = enqueue(f.store);
    launchWithAttempt(f.store, runId, "pure");
    const before = snapshot(f.store);
    expect(() => recoverExpiredRun(f.store, { runId, ownerId: HOST, token: "r", ttlMs: TTL }))
      .toThrow(/ownerChanged/);
    expect(snapshot(f.store)).toBe(before);
    f.clock.advance(TTL);
    const result = recoverExpiredRun(f.store, { runId, ownerId: HOST, token: "r", ttlMs: TTL });
    expect(result).toMatchObject({ blocked: false, generation: 2 });
    expect(result.orphanedWorkerEpochs).toHaveLength(1);
    expect(pair(runId)).toBe("running/parked");
    expect(nextLaunchableRuns(f.store, 5).map((r) => r.runId)).toEqual([runId]);
    expect(hostStatusCounts(f.store).expiredClaims).toBe(0);
  });

  it("blocks a run whose external attempt has no settled effect (effectAmbiguous)", () => {
    const runId = enqueue(f.store);
    launchWithAttempt(f.store, runId, "external");
    f.clock.advance(TTL);
    expect(hostStatusCounts(f.store).expiredClaims).toBe(1);
    const result = recoverExpiredRun(f.store, { runId, ownerId: HOST, token: "r", ttlMs: TTL });
    expect(result.blocked).toBe(true);
    expect(readRun(f.store, runId)?.blockedReason).toBe("effectAmbiguous");
    expect(hostStatusCounts(f.store)).toMatchObject({ ambiguousEffects: 1, blocked: 1 });
    expect(nextLaunchableRuns(f.store, 5)).toEqual([]);
  });

  it("refuses a run that is not live", () => {
    const runId = enqueue(f.store);
    refused(
      () => recoverExpiredRun(f.store, { runId, ownerId: HOST, token: "r", ttlMs: TTL }),
      /^Cannot recover run \S+: it is queued/,
    );
  });
});

describe("interruptRun()", () => {
  it("parks a crashed worker's run under the live claim; pure work runs again", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId, "pure");
    const result = interruptRun(f.store, claim, { reason: "workerCrashed" });
    expect(result).toMatchObject({ interruptedAttemptId: attemptId, blocked: false });
    expect(pair(runId)).toBe("running/parked");
    expect(readLease(f.store, runResource(runId))?.token_hash).toBeNull();
    expect(() => interruptRun(f.store, claim, { reason: "again" })).toThrow(/missingAuthority/);
    f.store.db.exec("UPDATE run_workers SET status = 'crashed'");
    expect(nextLaunchableRuns(f.store, 5).map((r) => r.runId)).toEqual([runId]);
  });

  it("makes an unsettled external effect ambiguous and blocks the run", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId, "external");
    const result = interruptRun(f.store, claim, { reason: "workerCrashed" });
    expect(result).toMatchObject({ interruptedAttemptId: attemptId, blocked: true });
    expect(readRun(f.store, runId)?.blockedReason).toBe("effectAmbiguous");
    expect(hostStatusCounts(f.store)).toMatchObject({ ambiguousEffects: 1, blocked: 1 });
  });

  it("does not block when the external attempt's effects all settled", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId, "external");
    f.store.db.exec(
      `INSERT INTO effects (effect_id, run_id, attempt_id, effect_key, effect_type, request_fingerprint, state, created_at, updated_at) VALUES ('e1', '${runId}', '${attemptId}', 'k1', 'http', 'fp', 'applied', 0, 0)`,
    );
    expect(interruptRun(f.store, claim, { reason: "workerCrashed" }).blocked).toBe(false);
  });
});

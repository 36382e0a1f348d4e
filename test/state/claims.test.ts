import { dirname } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  acquireClaim,
  type Claim,
  readLease,
  releaseClaim,
  renewalTick,
  renewClaim,
  renewedExpiry,
  runResource,
} from "../../src/state/claims.ts";
import { protectedWrite } from "../../src/state/protected-write.ts";
import {
  ClaimLostError,
  diskFullMessage,
  isDiskFull,
  RevisionConflictError,
} from "../../src/state/errors.ts";
import {
  acquireHostClaim,
  HostClaimHeldError,
  readHostEpoch,
  releaseHostClaim,
  renewHostClaim,
} from "../../src/state/host-claim.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { hostStatusCounts, listExpiredRuns } from "../../src/state/queries.ts";
import { pauseRun } from "../../src/state/transitions/run-commands.ts";
import { recordNodeUpdate } from "../../src/state/transitions/node-attempts.ts";
import { parkRun } from "../../src/state/transitions/run-park.ts";
import { recoverExpiredRun } from "../../src/state/transitions/run-recovery.ts";
import { claimRunForLaunch } from "../../src/state/transitions/run-launch.ts";
import {
  enqueue,
  type Fixture,
  HOST,
  HOST_EPOCH,
  launchWithAttempt,
  openFixture,
  snapshot,
  TTL,
} from "../support/state-store.ts";

let f: Fixture;
beforeEach(() => {
  f = openFixture();
});
afterEach(() => f.close());

/** Expects `fn` to throw ClaimLostError(reason) and change nothing. */
function expectClaimLost(fn: () => unknown, reason: ClaimLostError["reason"]): ClaimLostError {
  const before = snapshot(f.store);
  let error: unknown;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(ClaimLostError);
  expect((error as ClaimLostError).reason).toBe(reason);
  expect(snapshot(f.store)).toBe(before);
  return error as ClaimLostError;
}

const update = (claim: Claim, attemptId: string) => () =>
  recordNodeUpdate(f.store, claim, { attemptId, type: "progress", key: "k", data: 1 });

/** Lets the run claim expire and recovers the run, so a new launch can replace the claim. */
function expireAndRecover(runId: string): void {
  f.clock.advance(TTL + 1);
  recoverExpiredRun(f.store, { runId, ownerId: "recovery", token: "recovery-token", ttlMs: TTL });
}

describe("protectedWrite() claim checks", () => {
  it("renews the claim on every write and accepts a live claim", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    // A renewal (the launch's writes renew too) lasts at least its ttl less one renewal tick.
    f.clock.advance(TTL - renewalTick(TTL));
    update(claim, attemptId)();
    expect(readLease(f.store, runResource(runId))?.expires_at).toBe(
      renewedExpiry(f.clock.now(), TTL),
    );
    f.clock.advance(TTL - renewalTick(TTL));
    expect(() => update(claim, attemptId)()).not.toThrow();
  });

  it("renews at the resolution of a tick: same lease bytes within one, never past the ttl", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    const tick = renewalTick(TTL);
    f.clock.advance(tick - (f.clock.now() % tick)); // the start of a tick
    const leaseRow = () =>
      f.store.db.prepare("SELECT * FROM leases WHERE resource = ?").get(runResource(runId));
    update(claim, attemptId)();
    const first = leaseRow();
    expect(first).toMatchObject({ heartbeat_at: f.clock.now(), expires_at: f.clock.now() + TTL });
    f.clock.advance(tick - 1);
    update(claim, attemptId)();
    renewClaim(f.store, claim);
    expect(leaseRow()).toEqual(first);
    // The next tick moves both; the claim then expires exactly a ttl after that tick's start.
    f.clock.advance(1);
    update(claim, attemptId)();
    expect(leaseRow()).toMatchObject({ expires_at: f.clock.now() + TTL });
    f.clock.advance(TTL);
    expectClaimLost(update(claim, attemptId), "expired");
  });

  it("missingAuthority: the claim was released", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    parkRun(f.store, claim, { reason: "hostShutdown" });
    const error = expectClaimLost(update(claim, attemptId), "missingAuthority");
    expect(error.message).toBe(`Claim lost for run ${runId} generation 1: missingAuthority`);
    expect(error.message).not.toContain(claim.token);
  });

  it("missingAuthority: the claim names another run", () => {
    const a = enqueue(f.store);
    const b = enqueue(f.store);
    const { claim } = launchWithAttempt(f.store, a);
    expectClaimLost(
      () => protectedWrite(f.store, claim, { runId: b }, () => ({ type: "x", result: 1 })),
      "missingAuthority",
    );
  });

  it("expired: no write after the expiry, and an expired claim never renews", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    f.clock.advance(TTL);
    expectClaimLost(update(claim, attemptId), "expired");
    expectClaimLost(() => renewClaim(f.store, claim), "expired");
  });

  it("ownerChanged: another host took the run after expiry", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    expireAndRecover(runId);
    claimRunForLaunch(f.store, {
      hostEpoch: HOST_EPOCH,
      runId,
      ownerId: "host-b",
      token: "b-token",
      ttlMs: TTL,
      workerEpoch: "e-b",
      launchEnvelopeHash: "h",
    });
    expectClaimLost(update(claim, attemptId), "ownerChanged");
  });

  it("tokenChanged: the same host relaunched with a new token", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    expireAndRecover(runId);
    claimRunForLaunch(f.store, {
      hostEpoch: HOST_EPOCH,
      runId,
      ownerId: HOST,
      token: "new-token",
      ttlMs: TTL,
      workerEpoch: "e-2",
      launchEnvelopeHash: "h",
    });
    expectClaimLost(update(claim, attemptId), "tokenChanged");
  });

  it("generationChanged: same owner and token, newer generation", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    expireAndRecover(runId);
    const again = claimRunForLaunch(f.store, {
      hostEpoch: HOST_EPOCH,
      runId,
      ownerId: HOST,
      token: claim.token,
      ttlMs: TTL,
      workerEpoch: "e-3",
      launchEnvelopeHash: "h",
    });
    expect(again.generation).toBe(claim.generation + 2);
    expectClaimLost(update(claim, attemptId), "generationChanged");
  });

  it("an expected revision that moved is a conflict and changes nothing", () => {
    const runId = enqueue(f.store);
    const { claim } = launchWithAttempt(f.store, runId);
    const before = snapshot(f.store);
    expect(() =>
      protectedWrite(
        f.store,
        claim,
        { runId, expectedRevision: 1 },
        () => ({ type: "x", result: 0 }),
      )
    ).toThrow(RevisionConflictError);
    expect(snapshot(f.store)).toBe(before);
  });

  it("a throw inside the change rolls back the renewal too", () => {
    const runId = enqueue(f.store);
    const { claim } = launchWithAttempt(f.store, runId);
    const before = snapshot(f.store);
    f.clock.advance(10);
    expect(() =>
      protectedWrite(f.store, claim, { runId }, () => {
        throw new Error("domain check failed");
      })
    ).toThrow(/domain check failed/);
    expect(snapshot(f.store)).toBe(before);
  });
});

describe("acquireClaim() / renewClaim() / releaseClaim()", () => {
  const resource = "controller:demo";
  const take = (ownerId: string) =>
    acquireClaim(f.store, {
      resource,
      ownerType: "host",
      ownerId,
      hostEpoch: HOST_EPOCH,
      ttlMs: 100,
    });

  it("acquires only when free or expired, and the generation only grows", () => {
    const a = take("a");
    expect(a.generation).toBe(1);
    expect(() => take("b")).toThrow(ClaimLostError);
    f.clock.advance(100);
    const b = take("b");
    expect(b.generation).toBe(2);
    releaseClaim(f.store, b);
    const c = take("c");
    expect(c.generation).toBe(3);
    expect(readLease(f.store, resource)?.token_hash).not.toContain(c.token);
  });

  it("renews a live claim and refuses an expired one", () => {
    const a = take("a");
    f.clock.advance(99);
    expect(renewClaim(f.store, a)).toBe(f.clock.now() + 100);
    f.clock.advance(100);
    expectClaimLost(() => renewClaim(f.store, a), "expired");
  });

  it("release is exact: wrong token or generation is refused", () => {
    const a = take("a");
    expectClaimLost(() => releaseClaim(f.store, { ...a, token: "other" }), "tokenChanged");
    expectClaimLost(() => releaseClaim(f.store, { ...a, generation: 9 }), "generationChanged");
    expectClaimLost(() => releaseClaim(f.store, { ...a, ownerId: "z" }), "ownerChanged");
    releaseClaim(f.store, a);
    expectClaimLost(() => releaseClaim(f.store, a), "missingAuthority");
  });
});

describe("host claim", () => {
  it("takes increasing epochs, refuses a second live host, renews and releases exactly", () => {
    releaseHostClaim(f.store, f.host);
    const one = acquireHostClaim(f.store, { ownerId: "h1", token: "t1", ttlMs: 1000 });
    expect(one.epoch).toBe(2);
    expect(() => acquireHostClaim(f.store, { ownerId: "h2", token: "t2", ttlMs: 1000 })).toThrow(
      HostClaimHeldError,
    );
    f.clock.advance(999);
    renewHostClaim(f.store, one, 1000);
    f.clock.advance(999);
    expect(readHostEpoch(f.store)).toEqual({ epoch: 2, live: true, leaseUntil: f.clock.now() + 1 });
    f.clock.advance(1);
    expect(readHostEpoch(f.store)).toEqual({ epoch: 2, live: false, leaseUntil: null });
    expectClaimLost(() => renewHostClaim(f.store, one, 1000), "expired");
    const two = acquireHostClaim(f.store, { ownerId: "h2", token: "t2", ttlMs: 1000 });
    expect([two.epoch, two.takeover]).toEqual([3, "expired"]);
    expectClaimLost(() => releaseHostClaim(f.store, one), "ownerChanged");
    releaseHostClaim(f.store, two);
    const three = acquireHostClaim(f.store, { ownerId: "h3", token: "t3", ttlMs: 1000 });
    expect([three.epoch, three.takeover]).toEqual([4, "released"]);
    expect(checkInvariants(f.store)).toEqual([]);
  });

  it("on a full disk: writes fail SQLITE_FULL, a lapsed lease still this host's is renewed once space frees, never a taken one", () => {
    releaseHostClaim(f.store, f.host);
    const one = acquireHostClaim(f.store, { ownerId: "h1", token: "t1", ttlMs: 1000 });
    // A database that may not grow stands for a full disk: SQLite answers SQLITE_FULL.
    const pages = (f.store.db.prepare("PRAGMA page_count").get() as { page_count: number })
      .page_count;
    f.store.db.exec(`PRAGMA max_page_count = ${pages}`);
    let full: unknown;
    try {
      for (let i = 0; i < 1000; i++) enqueue(f.store);
    } catch (error) {
      full = error;
    }
    expect(isDiskFull(full)).toBe(true);
    expect(isDiskFull(new Error("database is locked"))).toBe(false);
    expect(diskFullMessage(f.store.path, "run.start")).toBe(
      `Command run.start was not recorded: the disk of the state directory ${
        dirname(f.store.path)
      } is full (nothing changed). Free space there and run it again; status, list and other ` +
        "reads still work meanwhile",
    );
    f.store.db.exec("PRAGMA max_page_count = 1073741823");
    f.clock.advance(1000);
    expectClaimLost(() => renewHostClaim(f.store, one, 1000), "expired");
    renewHostClaim(f.store, one, 1000, true);
    expect(readHostEpoch(f.store)).toMatchObject({ epoch: 2, live: true });
    f.clock.advance(1000);
    const two = acquireHostClaim(f.store, { ownerId: "h2", token: "t2", ttlMs: 1000 });
    expectClaimLost(() => renewHostClaim(f.store, one, 1000, true), "ownerChanged");
    expect(two.epoch).toBe(3);
  });
});

describe("host epoch fencing of run claims", () => {
  /** The fixture host goes; the next host takes epoch + 1 (run leases are left live). */
  function newHostTakesOver() {
    releaseHostClaim(f.store, f.host);
    const next = acquireHostClaim(f.store, { ownerId: "host-b", token: "tb", ttlMs: 60_000 });
    expect(next.epoch).toBe(HOST_EPOCH + 1);
    return next;
  }

  it("a claim of an older epoch cannot write or renew, however long its lease", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    newHostTakesOver();
    expectClaimLost(update(claim, attemptId), "ownerChanged");
    expectClaimLost(() => renewClaim(f.store, claim), "ownerChanged");
    expectClaimLost(() => parkRun(f.store, claim, { reason: "late" }), "ownerChanged");
  });

  it("counts as expired at once: listed for recovery, recovered, and commands take over", () => {
    const recovered = enqueue(f.store);
    const paused = enqueue(f.store);
    launchWithAttempt(f.store, recovered);
    launchWithAttempt(f.store, paused);
    expect(listExpiredRuns(f.store)).toEqual([]);
    expect(hostStatusCounts(f.store).expiredClaims).toBe(0);
    newHostTakesOver();
    expect(listExpiredRuns(f.store)).toEqual([recovered, paused]);
    expect(hostStatusCounts(f.store).expiredClaims).toBe(2);
    const result = recoverExpiredRun(f.store, {
      runId: recovered,
      ownerId: "host-b",
      token: "r",
      ttlMs: TTL,
    });
    expect(result.interruptedAttemptId).not.toBeNull();
    expect(pauseRun(f.store, { runId: paused, claim: null }).stopWorker).toBe(true);
    expect(listExpiredRuns(f.store)).toEqual([]);
    expect(checkInvariants(f.store)).toEqual([]);
  });

  it("a host claim names its epoch; a control claim names none", () => {
    expect(() =>
      acquireClaim(f.store, { resource: "x", ownerType: "host", ownerId: "h", ttlMs: 10 })
    ).toThrow(/names its host epoch/);
    expect(() =>
      acquireClaim(f.store, {
        resource: "x",
        ownerType: "control",
        ownerId: "h",
        hostEpoch: 1,
        ttlMs: 10,
      })
    ).toThrow(/names none/);
  });
});

describe("host claim takeover by process proof", () => {
  const start = (holderGone?: (identity: string) => boolean) =>
    acquireHostClaim(f.store, {
      ownerId: "h2",
      token: "t2",
      ttlMs: 1000,
      process: { pid: 7, startIdentity: "7:70" },
      holderGone,
    });

  it("takes a live claim at once when its recorded holder is gone, not while it runs", () => {
    releaseHostClaim(f.store, f.host);
    acquireHostClaim(f.store, {
      ownerId: "h1",
      token: "t1",
      ttlMs: 60_000,
      process: { pid: 5, startIdentity: "5:50" },
    });
    const asked: string[] = [];
    expect(() => start((identity) => (asked.push(identity), false))).toThrow(HostClaimHeldError);
    expect(asked).toEqual(["5:50"]);
    const taken = start(() => true);
    expect(taken.takeover).toBe("holderGone");
    expect(readHostEpoch(f.store)).toEqual({
      epoch: HOST_EPOCH + 2,
      live: true,
      leaseUntil: expect.any(Number),
    });
  });

  it("without a recorded identity only the lease counts", () => {
    // The fixture's host claim records no process.
    expect(() => start(() => true)).toThrow(HostClaimHeldError);
  });
});

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Claim, readLease, renewClaim, renewedExpiry } from "../../src/state/claims.ts";
import { protectedWrite } from "../../src/state/protected-write.ts";
import { ClaimLostError } from "../../src/state/errors.ts";
import { recordNodeUpdate } from "../../src/state/transitions/node-attempts.ts";
import {
  enqueue,
  type Fixture,
  launchWithAttempt,
  openFixture,
  snapshot,
} from "../support/state-store.ts";

// Token hash and lease ttl are cached per claim object; the cache must never let a changed
// claim through nor report another expiry than the stored one.
describe("claim facts cache", () => {
  let f: Fixture;
  beforeEach(() => {
    f = openFixture();
  });
  afterEach(() => f.close());

  it("refuses a claim object whose token changed after a successful write", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    const update = (c: Claim) =>
      recordNodeUpdate(f.store, c, { attemptId, type: "progress", key: "k", data: { n: 1 } });
    update(claim); // caches the hash of the right token
    const before = snapshot(f.store);
    (claim as { token: string }).token = "someone-elses-token";
    let reason: string | undefined;
    try {
      update(claim);
    } catch (error) {
      reason = error instanceof ClaimLostError ? error.reason : String(error);
    }
    expect(reason).toBe("tokenChanged");
    expect(snapshot(f.store)).toBe(before);
  });

  it("reports the stored expiry on every write, across clock moves and timer renewals", () => {
    const runId = enqueue(f.store);
    const { claim } = launchWithAttempt(f.store, runId);
    for (let i = 0; i < 4; i++) {
      f.clock.advance(1234 + i);
      if (i === 2) renewClaim(f.store, claim);
      const { expiresAt } = protectedWrite(f.store, claim, { runId }, () => ({
        type: "test.touch",
        result: null,
      }));
      expect(expiresAt).toBe(readLease(f.store, claim.resource)!.expires_at);
      expect(expiresAt).toBe(renewedExpiry(f.clock.now(), 30_000));
    }
  });

  it("refuses a claim object whose generation changed", () => {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId);
    recordNodeUpdate(f.store, claim, { attemptId, type: "p", key: "k", data: 1 });
    (claim as { generation: number }).generation += 1;
    expect(() => recordNodeUpdate(f.store, claim, { attemptId, type: "p", key: "k", data: 2 }))
      .toThrow(/generationChanged/);
  });
});

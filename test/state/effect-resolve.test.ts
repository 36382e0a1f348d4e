/**
 * An ambiguous effect is terminal for automatic retry: a plain resume is refused, and only the
 * operator's reviewed verdict (`resolveAmbiguousEffect`) lets the run move on, recorded in the
 * run's event log.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAmbiguousEffects } from "../../src/state/effect-queries.ts";
import { AmbiguousEffectError, TransitionError } from "../../src/state/errors.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { hostStatusCounts, listEvents, readRun, readRunFacts } from "../../src/state/queries.ts";
import { resolveAmbiguousEffect } from "../../src/state/transitions/effect-resolve.ts";
import { reserveEffect } from "../../src/state/transitions/effects.ts";
import { nextLaunchableRuns } from "../../src/state/transitions/run-launch.ts";
import { cancelRun, pauseRun, resumeRun } from "../../src/state/transitions/run-commands.ts";
import { interruptRun } from "../../src/state/transitions/run-recovery.ts";
import {
  enqueue,
  expectRefused,
  type Fixture,
  launchWithAttempt,
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

/** A run whose external attempt was interrupted: blocked `effectAmbiguous`. */
function blockedRun(managed = false): { runId: string; attemptId: string; effectId: string } {
  const runId = enqueue(f.store);
  const { claim, attemptId } = launchWithAttempt(f.store, runId, "external");
  if (managed) {
    reserveEffect(f.store, claim, {
      attemptId,
      effectType: "deploy",
      idempotencyKey: "k1",
      requestFingerprint: "fp",
    });
  }
  const { blocked } = interruptRun(f.store, claim, { reason: "workerCrashed" });
  expect(blocked).toBe(!managed);
  if (managed) {
    // A managed effect is retryable after a crash; it is ambiguous only after a terminal stop
    // of another attempt, which the test reproduces directly.
    f.store.db.exec(
      `UPDATE effects SET state = 'ambiguous'; UPDATE runs SET blocked_reason = 'effectAmbiguous'`,
    );
  }
  const [effect] = listAmbiguousEffects(f.store, runId);
  return { runId, attemptId, effectId: effect.effectId };
}

describe("a plain resume of an ambiguous effect", () => {
  it("is refused, naming the attempt and effect, and changes nothing", () => {
    const { runId, attemptId, effectId } = blockedRun();
    const before = snapshot(f.store);
    let error: unknown;
    try {
      resumeRun(f.store, { runId });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(AmbiguousEffectError);
    expect(error).toMatchObject({ attemptId, effectIds: [effectId], nodeId: "step" });
    expect((error as Error).message).toContain(attemptId);
    expect(snapshot(f.store)).toBe(before);
    expect(nextLaunchableRuns(f.store, 5)).toEqual([]);
  });

  it("is refused also when the block came from a pause, and while paused", () => {
    const runId = enqueue(f.store);
    const { claim } = launchWithAttempt(f.store, runId, "external");
    pauseRun(f.store, { runId, claim });
    expect(readRun(f.store, runId)).toMatchObject({
      paused: true,
      blockedReason: "effectAmbiguous",
    });
    expect(() => resumeRun(f.store, { runId })).toThrow(AmbiguousEffectError);
  });
});

describe("resolveAmbiguousEffect()", () => {
  it("--not-applied: the verdict is recorded and the node may run again", () => {
    const { runId, attemptId, effectId } = blockedRun();
    const result = resolveAmbiguousEffect(f.store, {
      runId,
      target: attemptId,
      verdict: "notApplied",
      operator: "ops@example",
    });
    expect(result).toMatchObject({ attemptId, effectIds: [effectId], adoptedAttemptId: null });
    expect(readRun(f.store, runId)).toMatchObject({ blockedReason: null, paused: false });
    expect(readRunFacts(f.store, runId).approvedRetry).toEqual({ attemptId });
    expect(hostStatusCounts(f.store).ambiguousEffects).toBe(0);
    const event = listEvents(f.store, runId).at(-1)!;
    expect(event.type).toBe("effect.resolved");
    expect(event.payload).toMatchObject({
      attemptId,
      verdict: "notApplied",
      operator: "ops@example",
      effectIds: [effectId],
    });
    expect(event.at).toBe(f.clock.now());
    f.store.db.exec("UPDATE run_workers SET status = 'crashed'");
    expect(nextLaunchableRuns(f.store, 5).map((r) => r.runId)).toEqual([runId]);
  });

  it("--applied: the given output becomes the node's result; nothing runs again", () => {
    const { runId, effectId } = blockedRun();
    const result = resolveAmbiguousEffect(f.store, {
      runId,
      target: effectId,
      verdict: "applied",
      output: { deployed: "v2" },
      operator: "ops",
    });
    const facts = readRunFacts(f.store, runId);
    expect(facts.approvedRetry).toBeUndefined();
    const last = facts.attempts.at(-1)!;
    expect(last).toMatchObject({
      attemptId: result.adoptedAttemptId,
      nodeId: "step",
      state: "ok",
      effect: "external",
      output: { deployed: "v2" },
    });
    expect(f.store.db.prepare("SELECT state FROM effects").all()).toEqual([{ state: "applied" }]);
  });

  it("takes the start of the attempt id, as status shows it, but not a start too short", () => {
    const { runId, attemptId } = blockedRun();
    expectRefused(
      f.store,
      () =>
        resolveAmbiguousEffect(f.store, {
          runId,
          target: attemptId.slice(0, 7),
          verdict: "retry",
          operator: "o",
        }),
      /is not the blocking attempt/,
    );
    const result = resolveAmbiguousEffect(f.store, {
      runId,
      target: attemptId.slice(0, 8),
      verdict: "notApplied",
      operator: "o",
    });
    expect(result.attemptId).toBe(attemptId);
  });

  it("--retry of a managed effect returns it to pending under its key", () => {
    const { runId, attemptId } = blockedRun(true);
    resolveAmbiguousEffect(f.store, { runId, target: attemptId, verdict: "retry", operator: "o" });
    expect(f.store.db.prepare("SELECT state FROM effects").all()).toEqual([{ state: "pending" }]);
    expect(listEvents(f.store, runId).at(-1)?.payload).toMatchObject({ verdict: "retry" });
  });

  it("refuses another target, a run that is not blocked, and a verdict without its output", () => {
    const { runId } = blockedRun();
    expectRefused(
      f.store,
      () =>
        resolveAmbiguousEffect(f.store, {
          runId,
          target: "att-other",
          verdict: "retry",
          operator: "o",
        }),
      /att-other is not the blocking attempt/,
    );
    const other = enqueue(f.store);
    expectRefused(
      f.store,
      () =>
        resolveAmbiguousEffect(f.store, {
          runId: other,
          target: "x",
          verdict: "retry",
          operator: "o",
        }),
      /only a run blocked on an ambiguous effect/,
    );
    expect(() =>
      resolveAmbiguousEffect(f.store, { runId, target: "x", verdict: "applied", operator: "o" })
    ).toThrow(/needs the node's output/);
    expect(() =>
      resolveAmbiguousEffect(f.store, {
        runId,
        target: "x",
        verdict: "retry",
        output: 1,
        operator: "o",
      })
    ).toThrow(/takes no output/);
    expect(() =>
      resolveAmbiguousEffect(f.store, { runId, target: "x", verdict: "retry", operator: "o" })
    )
      .toThrow(TransitionError);
  });

  it("checks the expected revision", () => {
    const { runId, attemptId } = blockedRun();
    const revision = readRun(f.store, runId)!.revision;
    expect(() =>
      resolveAmbiguousEffect(f.store, {
        runId,
        target: attemptId,
        verdict: "retry",
        operator: "o",
        expectedRevision: revision - 1,
      })
    ).toThrow(/Revision conflict/);
  });
});

describe("an ambiguous effect of a run that has ended", () => {
  /** A run cancelled inside an external node: unmanaged, or with a managed effect applying. */
  function cancelledMidAction(managed: boolean) {
    const runId = enqueue(f.store);
    const { claim, attemptId } = launchWithAttempt(f.store, runId, "external");
    if (managed) {
      reserveEffect(f.store, claim, {
        attemptId,
        effectType: "deploy",
        idempotencyKey: "k1",
        requestFingerprint: "fp",
      });
    }
    cancelRun(f.store, { runId, claim });
    const ambiguous = listAmbiguousEffects(f.store, runId);
    expect(ambiguous).toEqual([expect.objectContaining({ attemptId, managed })]);
    expect(hostStatusCounts(f.store).ambiguousEffects).toBe(1);
    return { runId, attemptId, effectId: ambiguous[0].effectId };
  }

  it("a cancel inside an unmanaged action keeps it as an ambiguous effect, as a pause does", () => {
    const { runId } = cancelledMidAction(false);
    expect(readRun(f.store, runId)).toMatchObject({ state: "cancelled" });
  });

  it("a cancel of a run blocked on it ends the block with the run; the effect stays to resolve", () => {
    const { runId, attemptId } = blockedRun();
    cancelRun(f.store, { runId, claim: null });
    expect(readRun(f.store, runId)).toMatchObject({ state: "cancelled", blockedReason: null });
    expect(listAmbiguousEffects(f.store, runId)).toEqual([expect.objectContaining({ attemptId })]);
    expect(
      resolveAmbiguousEffect(f.store, {
        runId,
        target: attemptId,
        verdict: "notApplied",
        operator: "o",
      })
        .ended,
    ).toBe(true);
  });

  it("--not-applied or --applied records the verdict; nothing runs and the run stays ended", () => {
    const first = cancelledMidAction(false);
    const revision = readRun(f.store, first.runId)!.revision;
    const events = listEvents(f.store, first.runId).length;
    expectRefused(
      f.store,
      () =>
        resolveAmbiguousEffect(f.store, {
          runId: first.runId,
          target: first.attemptId,
          verdict: "retry",
          operator: "o",
        }),
      /the run has ended and nothing of it runs again/,
    );
    expectRefused(
      f.store,
      () =>
        resolveAmbiguousEffect(f.store, {
          runId: first.runId,
          target: "att-other-attempt",
          verdict: "notApplied",
          operator: "o",
        }),
      /names none of its ambiguous effects/,
    );
    const result = resolveAmbiguousEffect(f.store, {
      runId: first.runId,
      target: first.attemptId.slice(0, 8),
      verdict: "notApplied",
      operator: "ops",
    });
    expect(result).toMatchObject({
      ended: true,
      effectIds: [first.effectId],
      revision,
      operator: "ops",
    });
    expect(readRun(f.store, first.runId)).toMatchObject({ state: "cancelled", revision });
    expect(listEvents(f.store, first.runId)).toHaveLength(events);
    expect(hostStatusCounts(f.store).ambiguousEffects).toBe(0);
    expect(nextLaunchableRuns(f.store, 5)).toEqual([]);

    const second = cancelledMidAction(true);
    resolveAmbiguousEffect(f.store, {
      runId: second.runId,
      target: second.effectId,
      verdict: "applied",
      output: { deployed: "v3" },
      operator: "ops",
    });
    expect(
      f.store.db.prepare("SELECT state, receipt_json FROM effects WHERE effect_id = ?").get(
        second.effectId,
      ),
    ).toEqual({ state: "applied", receipt_json: '{"deployed":"v3"}' });
    expect(hostStatusCounts(f.store).ambiguousEffects).toBe(0);
    expectRefused(
      f.store,
      () =>
        resolveAmbiguousEffect(f.store, {
          runId: second.runId,
          target: second.effectId,
          verdict: "notApplied",
          operator: "o",
        }),
      /only a run blocked on an ambiguous effect, or one that has ended with one/,
    );
  });
});

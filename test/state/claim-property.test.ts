/**
 * Randomized property test: thousands of seeded interleavings of launch (acquire), renew,
 * expiry, protected writes, release (park/complete), recovery and commands by several owners,
 * using stale and forged claims on purpose. An independent model of the current claim predicts
 * whether each protected operation may pass the claim check; the store must agree every time,
 * revisions move only on success, and `checkInvariants` stays empty.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Claim } from "../../src/state/claims.ts";
import { ClaimLostError, RevisionConflictError, TransitionError } from "../../src/state/errors.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { readRun } from "../../src/state/queries.ts";
import { renewClaim, renewedExpiry } from "../../src/state/claims.ts";
import {
  recordNodeFinished,
  recordNodeStarted,
  recordNodeUpdate,
} from "../../src/state/transitions/node-attempts.ts";
import { cancelRun, pauseRun, resumeRun } from "../../src/state/transitions/run-commands.ts";
import { resolveAmbiguousEffect } from "../../src/state/transitions/effect-resolve.ts";
import { blockingAttempt } from "../../src/state/effect-queries.ts";
import { completeRun } from "../../src/state/transitions/run-end.ts";
import { claimRunForLaunch, markWorkerLive } from "../../src/state/transitions/run-launch.ts";
import { parkRun } from "../../src/state/transitions/run-park.ts";
import { recoverExpiredRun } from "../../src/state/transitions/run-recovery.ts";
import { finishWorkerEpoch } from "../../src/state/transitions/workers.ts";
import { enqueue, type Fixture, HOST_EPOCH, openFixture } from "../support/state-store.ts";
import type { StateStore } from "../../src/state/store.ts";

const TTL = 1_000;
const OWNERS = ["host-1", "host-2", "host-3"];

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface ModelClaim {
  ownerId: string;
  token: string;
  generation: number;
  expiresAt: number;
}

let f: Fixture;
beforeEach(() => {
  f = openFixture();
});
afterEach(() => f.close());

function simulate(seed: number, steps: number): Record<string, number> {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const store = f.store;
  const runs: string[] = [enqueue(store), enqueue(store), enqueue(store)];
  /** The model: the claim each run currently has, and its last generation. */
  const current = new Map<string, ModelClaim | null>();
  const generation = new Map<string, number>(runs.map((r) => [r, 0]));
  /** Every claim ever issued (stale ones stay), plus forged variants, and their worker epochs. */
  const issued: Claim[] = [];
  const epochOf = new Map<Claim, string>();
  const latest = new Map<string, Claim>();
  const stats: Record<string, number> = { passed: 0, refusedClaim: 0, refusedState: 0 };
  let epochs = 0;

  const live = (runId: string): ModelClaim | null => {
    const c = current.get(runId);
    return c && c.expiresAt > f.clock.now() ? c : null;
  };
  const matches = (claim: Claim): boolean => {
    const c = live(claim.runId!);
    return !!c && c.ownerId === claim.ownerId && c.token === claim.token &&
      c.generation === claim.generation;
  };
  const openAttempt = (runId: string) =>
    store.db.prepare(
      "SELECT attempt_id FROM node_attempts WHERE run_id = ? AND state = 'running'",
    ).get(runId) as { attempt_id: string } | undefined;

  /** Runs a protected operation and checks the store agrees with the model. */
  const protectedOp = (name: string, claim: Claim, op: () => unknown, releases = false) => {
    const runId = claim.runId!;
    const expectPass = matches(claim);
    const revision = readRun(store, runId)!.revision;
    try {
      op();
    } catch (error) {
      expect(readRun(store, runId)!.revision, `${name} refused but changed the run`).toBe(revision);
      if (error instanceof ClaimLostError) {
        expect(expectPass, `${name}: a live exact claim was refused (${error.reason})`).toBe(false);
        stats.refusedClaim!++;
        return;
      }
      if (error instanceof TransitionError || error instanceof RevisionConflictError) {
        expect(expectPass, `${name}: a stale claim reached the state check`).toBe(true);
        stats.refusedState!++;
        return;
      }
      throw error;
    }
    expect(expectPass, `${name}: a stale or replaced owner got a write through`).toBe(true);
    expect(readRun(store, runId)!.revision).toBe(revision + 1);
    stats.passed!++;
    const c = current.get(runId)!;
    current.set(runId, releases ? null : { ...c, expiresAt: renewedExpiry(f.clock.now(), TTL) });
  };

  const finishEpochs = (runId: string) => {
    const rows = store.db.prepare(
      "SELECT worker_epoch FROM run_workers WHERE run_id = ? AND status IN ('starting', 'live')",
    ).all(runId) as Array<{ worker_epoch: string }>;
    for (const r of rows) {
      finishWorkerEpoch(store, {
        workerEpoch: r.worker_epoch,
        status: pick(["exited", "crashed", "claimLost"] as const),
        exitCode: 0,
        signal: null,
        diagnosticHash: null,
      });
    }
  };

  for (let step = 0; step < steps; step++) {
    const runId = pick(runs);
    const owner = pick(OWNERS);
    // Mostly the run's newest claim (so writes get through), often any stale or forged one.
    const newest = latest.get(runId);
    const claim = newest && rand() < 0.75 ? newest : issued.length ? pick(issued) : null;
    const roll = rand();
    if (roll < 0.12) {
      // The supervisor reaps exited workers of runs that are no longer active; sometimes a
      // worker of an active run crashes too.
      const queue = readRun(store, runId)!.queueState;
      if (queue === "parked" || queue === "queued" || rand() < 0.1) finishEpochs(runId);
      const token = `tok-${step}`;
      const workerEpoch = `w-${++epochs}`;
      const held = live(runId);
      try {
        const result = claimRunForLaunch(store, {
          hostEpoch: HOST_EPOCH,
          runId,
          ownerId: owner,
          token,
          ttlMs: TTL,
          workerEpoch,
          launchEnvelopeHash: "h",
        });
        expect(held, "acquired over a live claim").toBeNull();
        expect(result.generation).toBe(generation.get(runId)! + 1);
        generation.set(runId, result.generation);
        current.set(runId, {
          ownerId: owner,
          token,
          generation: result.generation,
          expiresAt: f.clock.now() + TTL,
        });
        issued.push(result.claim);
        latest.set(runId, result.claim);
        epochOf.set(result.claim, workerEpoch);
        // A forged twin: right owner and generation, wrong token.
        const forged = { ...result.claim, token: `${token}-forged` };
        issued.push(forged);
        epochOf.set(forged, workerEpoch);
      } catch (error) {
        if (!(error instanceof TransitionError || error instanceof ClaimLostError)) throw error;
      }
    } else if (roll < 0.24 && claim) {
      protectedOp("markWorkerLive", claim, () =>
        markWorkerLive(store, claim, {
          workerEpoch: epochOf.get(claim)!,
          pid: 100,
          startIdentity: "s",
        }));
    } else if (roll < 0.36 && claim) {
      protectedOp("recordNodeStarted", claim, () =>
        recordNodeStarted(store, claim, {
          attemptId: `a-${step}`,
          nodeId: "n",
          nodeKind: "compute",
          effect: rand() < 0.8 ? "pure" : "external",
          deadlineAt: null,
        }));
    } else if (roll < 0.52 && claim) {
      const attemptId = openAttempt(claim.runId!)?.attempt_id ?? "none";
      protectedOp(
        "recordNodeUpdate",
        claim,
        () => recordNodeUpdate(store, claim, { attemptId, type: "p", key: "k", data: step }),
      );
    } else if (roll < 0.6 && claim) {
      const attemptId = openAttempt(claim.runId!)?.attempt_id ?? "none";
      protectedOp(
        "recordNodeFinished",
        claim,
        () => recordNodeFinished(store, claim, { attemptId, output: step }),
      );
    } else if (roll < 0.68 && claim) {
      const expectPass = matches(claim);
      try {
        renewClaim(store, claim);
        expect(expectPass, "an expired or stale claim renewed").toBe(true);
        current.set(claim.runId!, {
          ...current.get(claim.runId!)!,
          expiresAt: renewedExpiry(f.clock.now(), TTL),
        });
      } catch (error) {
        if (!(error instanceof ClaimLostError)) throw error;
        expect(expectPass, "a live claim failed to renew").toBe(false);
      }
    } else if (roll < 0.73 && claim) {
      protectedOp("parkRun", claim, () => parkRun(store, claim, { reason: "r" }), true);
    } else if (roll < 0.76 && claim) {
      protectedOp("completeRun", claim, () => completeRun(store, claim, { output: 1 }), true);
    } else if (roll < 0.84) {
      const held = live(runId);
      try {
        recoverExpiredRun(store, { runId, ownerId: owner, token: `r-${step}`, ttlMs: TTL });
        expect(held, "recovered over a live claim").toBeNull();
        generation.set(runId, generation.get(runId)! + 1);
        current.set(runId, null);
      } catch (error) {
        if (!(error instanceof TransitionError || error instanceof ClaimLostError)) throw error;
      }
    } else if (roll < 0.88) {
      const held = live(runId);
      const hadClaim = !!store.db.prepare(
        "SELECT 1 FROM leases WHERE resource = ? AND token_hash IS NOT NULL",
      ).get(`run:${runId}`);
      // An ambiguous effect needs the operator's verdict; a plain resume is refused.
      const resolve = (store: StateStore, opts: { runId: string }) =>
        resolveAmbiguousEffect(store, {
          runId: opts.runId,
          target: blockingAttempt(store, opts.runId)?.attemptId ?? "none",
          verdict: "retry",
          operator: owner,
        });
      const command = pick([pauseRun, cancelRun, resumeRun, resolve]);
      const resumes = command === resumeRun || command === resolve;
      // The caller's own claim of this run, if the step picked one (it may be stale or forged):
      // only the exact live claim may be released by a command.
      const mine = claim?.runId === runId ? claim : null;
      try {
        command(store, { runId, claim: mine });
        expect(
          held === null || (mine !== null && matches(mine)) || resumes,
          "a command overrode a live claim that was not exactly its own",
        ).toBe(true);
        if (!resumes && hadClaim && !held) {
          generation.set(runId, generation.get(runId)! + 1);
        }
        if (!resumes) current.set(runId, null);
      } catch (error) {
        if (!(error instanceof TransitionError || error instanceof ClaimLostError)) throw error;
      }
    } else {
      f.clock.advance(Math.floor(rand() * TTL * 0.4));
    }
    if (readRun(store, runId)!.state.match(/completed|cancelled|failed|timed_out/)) {
      const fresh = enqueue(store);
      runs[runs.indexOf(runId)] = fresh;
      generation.set(fresh, 0);
    }
    const violations = checkInvariants(store);
    expect(violations, `invariants after step ${step}`).toEqual([]);
  }
  return stats;
}

describe("claims under random interleavings (seeded)", () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: no stale or replaced owner writes; invariants hold`, () => {
      const stats = simulate(seed, 1000);
      // The run must exercise both sides of the fence.
      expect(stats.passed).toBeGreaterThan(50);
      expect(stats.refusedClaim).toBeGreaterThan(200);
      expect(stats.refusedState).toBeGreaterThan(50);
    });
  }
});

/**
 * Crash consistency: every lifecycle transition is run with a failure injected before each of
 * its statements (and before COMMIT). Nothing partial may commit and the invariants must hold;
 * the uninjected run then succeeds.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fingerprint } from "../../src/protocol/canonical-json.ts";
import type { Claim } from "../../src/state/claims.ts";
import { acquireHostClaim, releaseHostClaim } from "../../src/state/host-claim.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import type { StateStore } from "../../src/state/store.ts";
import {
  recordNodeFailed,
  recordNodeFinished,
  recordNodeStarted,
  recordNodeUpdate,
  timeOutAttempt,
} from "../../src/state/transitions/node-attempts.ts";
import { cancelRun, pauseRun, resumeRun } from "../../src/state/transitions/run-commands.ts";
import { completeRun, failRun, timeOutRun } from "../../src/state/transitions/run-end.ts";
import { claimRunForLaunch, markWorkerLive } from "../../src/state/transitions/run-launch.ts";
import { blockRun, parkRun, waitRun } from "../../src/state/transitions/run-park.ts";
import { interruptRun, recoverExpiredRun } from "../../src/state/transitions/run-recovery.ts";
import { finishWorkerEpoch } from "../../src/state/transitions/workers.ts";
import { reserveEffect, settleEffect } from "../../src/state/transitions/effects.ts";
import { answerDecision } from "../../src/state/transitions/decisions.ts";
import { requestPresentation } from "../../src/state/transitions/turn-intents.ts";
import {
  enqueue,
  type Fixture,
  HOST,
  HOST_EPOCH,
  launch,
  launchWithAttempt,
  openFixture,
  snapshot,
  TTL,
} from "../support/state-store.ts";

class InjectedCrash extends Error {}

const INTERACTIVE = {
  binding: { executionMode: "interactive" as const, originSessionId: "session-1" },
};

let f: Fixture;
beforeEach(() => {
  f = openFixture();
});
afterEach(() => f.close());

const receipt = (id: string) => ({
  requestId: id,
  clientId: "c",
  operation: "op",
  requestFingerprint: fingerprint(id),
  receipt: { ok: true },
});

interface Scenario {
  name: string;
  /** Prepares the state; returns the transition to run. */
  setup(store: StateStore): () => unknown;
}

const withAttempt = (effect: "pure" | "external" = "pure") => (store: StateStore) =>
  launchWithAttempt(store, enqueue(store), effect);

const scenarios: Scenario[] = [
  { name: "enqueueRun", setup: (s) => () => enqueue(s, { receipt: receipt("start") }) },
  {
    name: "claimRunForLaunch",
    setup: (s) => {
      const runId = enqueue(s);
      return () =>
        claimRunForLaunch(s, {
          hostEpoch: HOST_EPOCH,
          runId,
          ownerId: HOST,
          token: "t",
          ttlMs: TTL,
          workerEpoch: "w-crash",
          launchEnvelopeHash: "h",
        });
    },
  },
  {
    name: "markWorkerLive",
    setup: (s) => {
      const { claim } = claimRunForLaunch(s, {
        hostEpoch: HOST_EPOCH,
        runId: enqueue(s),
        ownerId: HOST,
        token: "t",
        ttlMs: TTL,
        workerEpoch: "w-live",
        launchEnvelopeHash: "h",
      });
      return () => markWorkerLive(s, claim, { workerEpoch: "w-live", pid: 1, startIdentity: "x" });
    },
  },
  {
    name: "recordNodeStarted",
    setup: (s) => {
      const claim = launch(s, enqueue(s));
      return () =>
        recordNodeStarted(s, claim, {
          attemptId: "a-new",
          nodeId: "n",
          nodeKind: "compute",
          effect: "pure",
          deadlineAt: 5,
          receipt: receipt("m1"),
        });
    },
  },
  {
    name: "recordNodeUpdate",
    setup: (s) => {
      const { claim, attemptId } = withAttempt()(s);
      return () => recordNodeUpdate(s, claim, { attemptId, type: "t", key: "k", data: [1] });
    },
  },
  {
    name: "recordNodeFinished",
    setup: (s) => {
      const { claim, attemptId } = withAttempt()(s);
      return () => recordNodeFinished(s, claim, { attemptId, output: { x: 1 } });
    },
  },
  {
    name: "recordNodeFailed",
    setup: (s) => {
      const { claim, attemptId } = withAttempt()(s);
      return () =>
        recordNodeFailed(s, claim, {
          attemptId,
          outcome: "failed",
          error: { code: "nodeFailed", message: "m" },
        });
    },
  },
  {
    name: "timeOutAttempt",
    setup: (s) => {
      const { claim, attemptId } = withAttempt()(s);
      return () => timeOutAttempt(s, claim, { attemptId });
    },
  },
  {
    name: "completeRun",
    setup: (s) => {
      const claim = launch(s, enqueue(s));
      return () => completeRun(s, claim, { output: 1, receipt: receipt("done") });
    },
  },
  {
    // The completion turn becomes eligible in the terminal transaction or not at all.
    name: "completeRun with a completion presentation",
    setup: (s) => {
      const claim = launch(s, enqueue(s, INTERACTIVE));
      requestPresentation(s, claim, { prompt: "Summarize" });
      return () => completeRun(s, claim, { output: 1, receipt: receipt("done") });
    },
  },
  {
    name: "requestPresentation",
    setup: (s) => {
      const claim = launch(s, enqueue(s, INTERACTIVE));
      return () => requestPresentation(s, claim, { prompt: "Summarize" });
    },
  },
  {
    name: "recordNodeFinished with a notification",
    setup: (s) => {
      const { claim, attemptId } = launchWithAttempt(s, enqueue(s, INTERACTIVE));
      return () =>
        recordNodeFinished(s, claim, {
          attemptId,
          output: { kind: "final", message: "m" },
          notification: { kind: "final", message: "m" },
        });
    },
  },
  {
    name: "failRun of an interactive run (successor turn)",
    setup: (s) => {
      const { claim } = launchWithAttempt(s, enqueue(s, INTERACTIVE));
      return () => failRun(s, claim, { error: { code: "nodeFailed", message: "m" } });
    },
  },
  {
    name: "failRun",
    setup: (s) => {
      const { claim } = withAttempt("external")(s);
      return () => failRun(s, claim, { error: { code: "nodeFailed", message: "m" } });
    },
  },
  {
    name: "timeOutRun",
    setup: (s) => {
      const { claim } = withAttempt()(s);
      return () => timeOutRun(s, claim);
    },
  },
  {
    name: "waitRun",
    setup: (s) => {
      const { claim, attemptId } = withAttempt()(s);
      return () =>
        waitRun(s, claim, { attemptId, nodeId: "step", kind: "checkpoint", request: {} });
    },
  },
  {
    name: "parkRun",
    setup: (s) => {
      const { claim } = withAttempt()(s);
      return () => parkRun(s, claim, { reason: "hostShutdown" });
    },
  },
  {
    name: "blockRun (claim)",
    setup: (s) => {
      const { claim } = withAttempt()(s);
      return () =>
        blockRun(s, claim, { runId: claim.runId!, reason: "workflowSourceChanged", detail: "d" });
    },
  },
  {
    name: "blockRun (no claim)",
    setup: (s) => {
      const runId = enqueue(s);
      return () => blockRun(s, null, { runId, reason: "workflowSourceChanged", detail: "d" });
    },
  },
  {
    name: "pauseRun (live)",
    setup: (s) => {
      const { claim } = withAttempt()(s);
      return () => pauseRun(s, { runId: claim.runId!, claim, receipt: receipt("p") });
    },
  },
  {
    name: "resumeRun",
    setup: (s) => {
      const runId = enqueue(s);
      pauseRun(s, { runId, claim: null });
      return () => resumeRun(s, { runId, receipt: receipt("r") });
    },
  },
  {
    name: "cancelRun (live)",
    setup: (s) => {
      const { claim, attemptId } = withAttempt("external")(s);
      s.db.exec(
        `INSERT INTO effects (effect_id, run_id, attempt_id, effect_key, effect_type, request_fingerprint, state, created_at, updated_at) VALUES ('e1', '${claim.runId}', '${attemptId}', 'k', 't', 'f', 'applying', 0, 0)`,
      );
      return () => cancelRun(s, { runId: claim.runId!, claim, receipt: receipt("c") });
    },
  },
  {
    name: "cancelRun (waiting)",
    setup: (s) => {
      const { claim, attemptId } = withAttempt()(s);
      waitRun(s, claim, { attemptId, nodeId: "step", kind: "humanDecision", request: {} });
      return () => cancelRun(s, { runId: claim.runId!, claim: null });
    },
  },
  {
    name: "cancelRun (expired claim)",
    setup: (s) => {
      const { claim } = withAttempt()(s);
      f.clock.advance(TTL);
      return () => cancelRun(s, { runId: claim.runId!, claim: null });
    },
  },
  {
    name: "recoverExpiredRun (external)",
    setup: (s) => {
      const { claim } = withAttempt("external")(s);
      f.clock.advance(TTL);
      return () =>
        recoverExpiredRun(s, { runId: claim.runId!, ownerId: HOST, token: "r", ttlMs: TTL });
    },
  },
  {
    name: "interruptRun (external)",
    setup: (s) => {
      const { claim } = withAttempt("external")(s);
      return () => interruptRun(s, claim, { reason: "workerCrashed" });
    },
  },
  {
    name: "reserveEffect",
    setup: (s) => {
      const { claim, attemptId } = withAttempt("external")(s);
      return () =>
        reserveEffect(s, claim, {
          attemptId,
          effectType: "t",
          idempotencyKey: "k",
          requestFingerprint: "f",
        });
    },
  },
  {
    name: "settleEffect",
    setup: (s) => {
      const { claim, attemptId } = withAttempt("external")(s);
      const { result } = reserveEffect(s, claim, {
        attemptId,
        effectType: "t",
        idempotencyKey: "k",
        requestFingerprint: "f",
      });
      return () =>
        settleEffect(s, claim, { effectId: result.effectId, outcome: "applied", effectReceipt: 1 });
    },
  },
  {
    name: "answerDecision",
    setup: (s) => {
      const { claim, attemptId } = withAttempt()(s);
      waitRun(s, claim, { attemptId, nodeId: "step", kind: "humanDecision", request: {} });
      const runId = claim.runId!;
      return () =>
        answerDecision(s, {
          runId,
          nodeId: "step",
          attemptId,
          kind: "humanDecision",
          answer: "yes",
          ownerId: "host-a",
          receipt: receipt("a"),
        });
    },
  },
  {
    name: "finishWorkerEpoch",
    setup: (s) => {
      const claim: Claim = launch(s, enqueue(s));
      parkRun(s, claim, { reason: "exit" });
      const row = s.db.prepare("SELECT worker_epoch FROM run_workers").get() as {
        worker_epoch: string;
      };
      return () =>
        finishWorkerEpoch(s, {
          workerEpoch: row.worker_epoch,
          status: "exited",
          exitCode: 0,
          signal: null,
          diagnosticHash: null,
        });
    },
  },
  {
    name: "acquireHostClaim",
    setup: (s) => {
      releaseHostClaim(s, f.host);
      return () => acquireHostClaim(s, { ownerId: "h", token: "t", ttlMs: 1000 });
    },
  },
];

describe("a failure before any statement of a transition commits nothing", () => {
  for (const scenario of scenarios) {
    it(scenario.name, () => {
      const act = scenario.setup(f.store);
      expect(checkInvariants(f.store)).toEqual([]);
      const before = snapshot(f.store);
      // Count the statements with a probe that fails at COMMIT (so it commits nothing).
      let statements = 0;
      f.store.beforeStatement = (sql) => {
        statements++;
        if (sql === "COMMIT") throw new InjectedCrash("probe");
      };
      expect(act).toThrow(InjectedCrash);
      f.store.beforeStatement = null;
      expect(snapshot(f.store)).toBe(before);
      expect(statements).toBeGreaterThan(2);
      for (let failAt = 1; failAt <= statements; failAt++) {
        let seen = 0;
        f.store.beforeStatement = () => {
          if (++seen === failAt) throw new InjectedCrash(`crash at statement ${failAt}`);
        };
        expect(act, `failure at statement ${failAt}`).toThrow(InjectedCrash);
        f.store.beforeStatement = null;
        expect(f.store.db.isTransaction).toBe(false);
        expect(snapshot(f.store), `state after failure at ${failAt}`).toBe(before);
        expect(checkInvariants(f.store)).toEqual([]);
      }
      act();
      expect(snapshot(f.store)).not.toBe(before);
      expect(checkInvariants(f.store)).toEqual([]);
    });
  }
});

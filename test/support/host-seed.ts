/**
 * Seeds a state directory before a host starts: runs enqueued through the real state
 * transitions, parked far in the future so no scheduler launches them during a test. Commits
 * run with synchronous=OFF (nothing crashes while seeding; the host reopens the file anyway).
 */
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { claimRunForLaunch, markWorkerLive } from "../../src/state/transitions/run-launch.ts";
import { recordNodeFailed, recordNodeStarted } from "../../src/state/transitions/node-attempts.ts";
import { pauseRun } from "../../src/state/transitions/run-commands.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { withSeedHost } from "../state/seed-host.ts";
import { fingerprint } from "../../src/protocol/canonical-json.ts";
import type { JsonValue } from "../../src/protocol/canonical-json.ts";

const FAR_FUTURE = Date.UTC(2100, 0, 1);

export interface SeedRun {
  runId: string;
  input?: JsonValue;
  projectPath?: string;
  /** Claim the run for a worker of another (fictional) host with a long lease. */
  claimedByOtherHost?: boolean;
  originSessionId?: string;
}

export function seedRuns(stateDir: string, runs: SeedRun[]): void {
  const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds });
  // A seed before any host runs needs no fsync per commit: a thousand runs took seconds.
  store.db.exec("PRAGMA synchronous = OFF");
  try {
    for (const run of runs) {
      const input = run.input ?? { task: "private-input-text" };
      enqueueRun(store, {
        runId: run.runId,
        workflowName: "seeded",
        workflowRef: "/seed/project/.pi/workflows/seeded.workflow.ts",
        title: `Seeded ${run.runId}`,
        projectPath: run.projectPath ?? "/seed/project",
        workflowSource: {
          root: { kind: "file", path: "/seed/project/.pi/workflows/seeded.workflow.ts", hash: "0" },
          mounted: [],
        },
        definitionDigest: fingerprint("seeded-definition"),
        input,
        inputHash: fingerprint(input),
        binding: run.originSessionId
          ? { executionMode: "interactive", originSessionId: run.originSessionId }
          : { executionMode: "headless" },
        // Also a run claimed elsewhere: recovery parks it, and a launch from here (its file does
        // not exist) would fail it a few seconds in, under a test that expects it running.
        availableAt: FAR_FUTURE,
      });
      if (run.claimedByOtherHost) {
        withSeedHost(store, (hostEpoch) =>
          claimRunForLaunch(store, {
            runId: run.runId,
            ownerId: "host-elsewhere",
            hostEpoch,
            token: "seed-token",
            ttlMs: 60 * 60_000,
            workerEpoch: `epoch-${run.runId}`,
            launchEnvelopeHash: fingerprint("launch"),
          }));
      }
    }
  } finally {
    closeStateStore(store);
  }
}

/**
 * Gives the seeded run `runId` (not yet launched) `count` failed attempts with `errorChars`-long
 * messages through the real transitions, then pauses it so no scheduler launches it. Commits
 * with synchronous=OFF: seeding thousands of attempts must not take minutes.
 */
export function seedAttempts(
  stateDir: string,
  runId: string,
  count: number,
  errorChars = 40,
): void {
  const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds });
  store.db.exec("PRAGMA synchronous = OFF");
  try {
    withSeedHost(
      store,
      (hostEpoch) => seedAttemptsUnder(store, runId, count, errorChars, hostEpoch),
    );
  } finally {
    closeStateStore(store);
  }
}

function seedAttemptsUnder(
  store: ReturnType<typeof openStateStore>,
  runId: string,
  count: number,
  errorChars: number,
  hostEpoch: number,
): void {
  const { claim } = claimRunForLaunch(store, {
    runId,
    ownerId: "seed-host",
    hostEpoch,
    token: "seed-token",
    ttlMs: 60 * 60_000,
    workerEpoch: `epoch-${runId}`,
    launchEnvelopeHash: fingerprint("launch"),
  });
  markWorkerLive(store, claim, { workerEpoch: `epoch-${runId}`, pid: 4242, startIdentity: "1" });
  for (let i = 1; i <= count; i++) {
    const attemptId = `${runId}-a${i}`;
    recordNodeStarted(store, claim, {
      attemptId,
      nodeId: `n${i % 7}`,
      nodeKind: "compute",
      effect: "pure",
      deadlineAt: null,
    });
    recordNodeFailed(store, claim, {
      attemptId,
      outcome: "failed",
      error: { code: "seeded", message: `${i} `.padEnd(errorChars, "é") },
    });
  }
  pauseRun(store, { runId, claim });
}

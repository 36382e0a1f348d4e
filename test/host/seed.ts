/**
 * Seeds a state directory before a host starts: runs enqueued through the real state
 * transitions, parked far in the future so no scheduler launches them during a test.
 */
import { randomIds, systemClock } from "../../src/state/clock.ts";
import { claimRunForLaunch } from "../../src/state/transitions/run-launch.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
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
        availableAt: run.claimedByOtherHost ? undefined : FAR_FUTURE,
      });
      if (run.claimedByOtherHost) {
        claimRunForLaunch(store, {
          runId: run.runId,
          ownerId: "host-elsewhere",
          token: "seed-token",
          ttlMs: 60 * 60_000,
          workerEpoch: `epoch-${run.runId}`,
          launchEnvelopeHash: fingerprint("launch"),
        });
      }
    }
  } finally {
    closeStateStore(store);
  }
}

/**
 * Builds a synthetic state database for the viewer benchmark through the real transitions:
 * tens of projects, hundreds of runs (most finished, some running or waiting at a decision),
 * thousands of attempts and updates, and large outputs, about 97 MB with the defaults. Only
 * counts and the size are ever printed. Generation runs with `synchronous=OFF` (it is a
 * fixture, not a durability test).
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { fingerprint, type JsonValue } from "../../src/protocol/canonical-json.ts";
import { FakeClock, sequentialIds } from "../../src/base/clock.ts";
import { acquireHostClaim, readHostEpoch, releaseHostClaim } from "../../src/state/host-claim.ts";
import { closeStateStore, openStateStore, type StateStore } from "../../src/state/store.ts";
import { claimRunForLaunch, markWorkerLive } from "../../src/state/transitions/run-launch.ts";
import {
  recordNodeFailed,
  recordNodeFinished,
  recordNodeStarted,
  recordNodeUpdate,
} from "../../src/state/transitions/node-attempts.ts";
import { completeRun, failRun } from "../../src/state/transitions/run-end.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { waitRun } from "../../src/state/transitions/run-park.ts";
import { latestViewerRevision } from "../../src/state/viewer-queries.ts";
import { compileWorkflow } from "../../src/workflows/compile.ts";
import { reviewLoop } from "../render/fixtures/review-loop.ts";
import type { Claim } from "../../src/state/claims.ts";

export interface ViewerDbOptions {
  projects: number;
  runs: number;
  /** Attempts per run, on average. */
  attemptsPerRun: number;
  /** Updates per run, on average. */
  updatesPerRun: number;
  /** Bytes of a large output; every fourth attempt has one. */
  largeOutputBytes: number;
}

export const DEFAULT_VIEWER_DB: ViewerDbOptions = {
  projects: 44,
  runs: 405,
  attemptsPerRun: 5,
  updatesPerRun: 3,
  largeOutputBytes: 189_000,
};

export interface ViewerDbCounts {
  projects: number;
  runs: number;
  activeRuns: number;
  attempts: number;
  updates: number;
  viewerDeltas: number;
  bytes: number;
}

const NODES = ["plan", "review", "implement", "publish", "done"];

export function generateViewerDb(stateDir: string, opts: ViewerDbOptions): ViewerDbCounts {
  const clock = new FakeClock(Date.now() - 7 * 24 * 3600_000);
  const store = openStateStore({ stateDir, clock, ids: sequentialIds() });
  store.db.exec("PRAGMA synchronous = OFF");
  // Runs are launched under a seed host, released at the end: a real host later fences them.
  const host = acquireHostClaim(store, { ownerId: "bench", token: "seed", ttlMs: 2 ** 40 });
  const definition = compileWorkflow(reviewLoop).snapshot;
  const digest = fingerprint(definition);
  let attempts = 0;
  let updates = 0;
  let active = 0;
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const filler = "lorem ipsum dolor sit amet ".repeat(Math.ceil(opts.largeOutputBytes / 27));
  for (let r = 0; r < opts.runs; r++) {
    const runId = enqueueRun(store, {
      workflowName: r % 3 === 0 ? "review-loop" : `workflow-${r % 11}`,
      workflowRef: `/bench/project-${r % opts.projects}/.pi/workflows/w.workflow.ts`,
      title: `Synthetic run ${r}`,
      projectPath: `/bench/project-${r % opts.projects}`,
      workflowSource: {
        root: { kind: "file", path: "/bench/w.workflow.ts", hash: "sha256:x" },
        mounted: [],
      },
      definitionDigest: digest,
      definition,
      input: { task: `task ${r}`, notes: filler.slice(0, 2000) },
      inputHash: "sha256:in",
      binding: {
        executionMode: r % 4 === 0 ? "interactive" : "headless",
        originSessionId: r % 4 === 0 ? `session-${r}` : null,
      },
    }).runId;
    clock.advance(60_000);
    const claim = launch(store, runId);
    const n = 1 + Math.floor(random() * (opts.attemptsPerRun * 2 - 1));
    const u = Math.floor(random() * (opts.updatesPerRun * 2 + 1));
    // The newest few runs stay live: running, or waiting at a decision.
    const ending = r >= opts.runs - 30
      ? (r % 3 === 0 ? "waiting" : "running")
      : r % 9 === 0
      ? "failed"
      : "completed";
    for (let i = 0; i < n; i++) {
      const attemptId = store.ids.next("attempt");
      const last = i === n - 1;
      recordNodeStarted(store, claim, {
        attemptId,
        nodeId: NODES[i % NODES.length],
        nodeKind: "agent",
        effect: "pure",
        deadlineAt: null,
      });
      attempts++;
      for (let k = 0; k < (last ? u : 0); k++) {
        recordNodeUpdate(store, claim, {
          attemptId,
          type: k % 2 === 0 ? "progress" : "log",
          key: `k${k}`,
          data: k % 2 === 0
            ? { schema: "pi-workflows.progress.v1", completed: k, total: u + 1 }
            : { line: filler.slice(0, 1500) },
        });
        updates++;
      }
      clock.advance(5_000);
      if (last && ending === "running") break;
      if (last && ending === "waiting") {
        waitRun(store, claim, {
          attemptId,
          nodeId: NODES[i % NODES.length],
          kind: "humanDecision",
          request: {
            title: "Approve?",
            subject: "s",
            presentation: {
              schema: "pi-workflows.decision-presentation.v1",
              summary: "x",
              blocks: [],
            },
          },
        });
        break;
      }
      if (last && ending === "failed") {
        recordNodeFailed(store, claim, {
          attemptId,
          outcome: "failed",
          error: { code: "nodeFailed", message: "synthetic" },
        });
        break;
      }
      const output: JsonValue = attempts % 4 === 0
        ? { text: filler.slice(0, opts.largeOutputBytes), i }
        : { ok: true, i };
      recordNodeFinished(store, claim, { attemptId, output });
    }
    if (ending === "completed") completeRun(store, claim, { output: { done: true, r } });
    else if (ending === "failed") {
      failRun(store, claim, { error: { code: "nodeFailed", message: "synthetic" } });
    } else active++;
  }
  const counts = {
    projects: opts.projects,
    runs: opts.runs,
    activeRuns: active,
    attempts,
    updates,
    // Deltas are never deleted and numbered from 1, so the newest revision is their count.
    viewerDeltas: latestViewerRevision(store),
    bytes: 0,
  };
  releaseHostClaim(store, host);
  store.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  closeStateStore(store);
  counts.bytes = statSync(join(stateDir, "state.sqlite")).size;
  return counts;
}

let epochs = 0;

export function launch(store: StateStore, runId: string): Claim {
  const workerEpoch = `bench-epoch-${++epochs}-${runId}`;
  const { claim } = claimRunForLaunch(store, {
    runId,
    ownerId: "bench",
    hostEpoch: readHostEpoch(store)!.epoch,
    token: store.ids.token(),
    ttlMs: 24 * 3600_000,
    workerEpoch,
    launchEnvelopeHash: "sha256:env",
  });
  markWorkerLive(store, claim, { workerEpoch, pid: 1, startIdentity: "bench" });
  return claim;
}

/**
 * Seeds a state database through the real transitions (no host): a review-loop run part way
 * through (its graph stored), and a finished hello run. Returns the run ids.
 */
import { FakeClock, sequentialIds } from "../../src/base/clock.ts";
import { acquireHostClaim, releaseHostClaim } from "../../src/state/host-claim.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { claimRunForLaunch, markWorkerLive } from "../../src/state/transitions/run-launch.ts";
import {
  recordNodeFinished,
  recordNodeStarted,
} from "../../src/state/transitions/node-attempts.ts";
import { completeRun } from "../../src/state/transitions/run-end.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { compileWorkflow } from "../../src/workflows/compile.ts";
import { fingerprint } from "../../src/protocol/canonical-json.ts";
import type { DefinitionSnapshot } from "../../src/protocol/definition-snapshot.ts";
import { reviewLoop } from "../render/fixtures/review-loop.ts";

export function seedViewerRuns(stateDir: string): { review: string; hello: string } {
  const clock = new FakeClock(Date.now() - 120_000);
  const store = openStateStore({ stateDir, clock, ids: sequentialIds() });
  const host = acquireHostClaim(store, { ownerId: "seed", token: "seed", ttlMs: 3_600_000 });
  const snapshot = compileWorkflow(reviewLoop).snapshot;
  const enqueue = (name: string, title: string, definition?: DefinitionSnapshot) =>
    enqueueRun(store, {
      workflowName: name,
      workflowRef: `builtin:${name}`,
      title,
      projectPath: "/project",
      workflowSource: { root: { kind: "builtin", id: name }, mounted: [] },
      definitionDigest: definition ? fingerprint(definition) : `sha256:${name}`,
      ...(definition ? { definition } : {}),
      input: {},
      inputHash: "sha256:in",
      binding: { executionMode: "headless" },
    }).runId;
  const launch = (runId: string) => {
    const { claim } = claimRunForLaunch(store, {
      runId,
      ownerId: "seed",
      hostEpoch: host.epoch,
      token: store.ids.token(),
      ttlMs: 3_600_000,
      workerEpoch: `epoch-${runId}`,
      launchEnvelopeHash: "sha256:env",
    });
    markWorkerLive(store, claim, { workerEpoch: `epoch-${runId}`, pid: 1, startIdentity: "x" });
    return claim;
  };
  const step = (claim: ReturnType<typeof launch>, nodeId: string, finish: boolean) => {
    const attemptId = store.ids.next("attempt");
    recordNodeStarted(store, claim, {
      attemptId,
      nodeId,
      nodeKind: "agent",
      effect: "pure",
      deadlineAt: null,
    });
    clock.advance(1500);
    if (finish) recordNodeFinished(store, claim, { attemptId, output: { node: nodeId } });
  };
  const hello = enqueue("hello", "Say hello");
  const helloClaim = launch(hello);
  step(helloClaim, "greet", true);
  completeRun(store, helloClaim, { output: { message: "Hello" } });
  clock.advance(10_000);
  const review = enqueue("review-loop", "Ship the parser", snapshot);
  const claim = launch(review);
  for (const node of ["plan", "review", "plan", "review"]) step(claim, node, true);
  step(claim, "implement", false);
  releaseHostClaim(store, host);
  closeStateStore(store);
  return { review, hello };
}

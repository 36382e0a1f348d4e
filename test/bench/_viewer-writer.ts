/**
 * The benchmark's live writer (a child process): one running run that keeps committing attempts
 * and updates every `intervalMs`, as a busy worker would, until it is killed. It sends its run
 * id to the parent over IPC (never printed).
 */
import { fingerprint } from "../../src/protocol/canonical-json.ts";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { acquireHostClaim } from "../../src/state/host-claim.ts";
import { openStateStore } from "../../src/state/store.ts";
import {
  recordNodeFinished,
  recordNodeStarted,
  recordNodeUpdate,
} from "../../src/state/transitions/node-attempts.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { compileWorkflow } from "../../src/workflows/compile.ts";
import { reviewLoop } from "../render/fixtures/review-loop.ts";
import { launch } from "./_viewer-db.ts";

const [dir, interval] = process.argv.slice(2);
const intervalMs = Number(interval ?? 25);
const store = openStateStore({ stateDir: dir, clock: systemClock, ids: randomIds });
// The generator leaves the host claim released; a run claim is only live under the epoch that
// holds it, so the writer holds it as the host would (the previous writer, if any, was killed).
acquireHostClaim(store, {
  ownerId: "bench-writer",
  token: randomIds.token(),
  ttlMs: 24 * 3600_000,
  holderGone: () => true,
});
const definition = compileWorkflow(reviewLoop).snapshot;
const runId = enqueueRun(store, {
  workflowName: "review-loop",
  workflowRef: "builtin:review-loop",
  title: "Live benchmark run",
  projectPath: "/bench/live",
  workflowSource: { root: { kind: "builtin", id: "review-loop" }, mounted: [] },
  definitionDigest: fingerprint(definition),
  definition,
  input: {},
  inputHash: "sha256:in",
  binding: { executionMode: "headless" },
}).runId;
const claim = launch(store, runId);
const nodes = ["plan", "review", "implement", "publish"];
let step = 0;
let attemptId = "";
let updates = 0;
process.send?.({ runId });
setInterval(() => {
  if (attemptId === "") {
    attemptId = randomIds.next("attempt");
    recordNodeStarted(store, claim, {
      attemptId,
      nodeId: nodes[step++ % nodes.length],
      nodeKind: "agent",
      effect: "pure",
      deadlineAt: null,
    });
    updates = 0;
  } else if (updates < 8) {
    recordNodeUpdate(store, claim, {
      attemptId,
      type: "progress",
      key: "work",
      data: { schema: "pi-workflows.progress.v1", completed: ++updates, total: 8 },
    });
  } else {
    recordNodeFinished(store, claim, { attemptId, output: { step, text: "x".repeat(4000) } });
    attemptId = "";
  }
}, intervalMs);

/**
 * SIGKILL the worker at every durable boundary of a multi-node workflow: before each message
 * kind is sent (the host never sees it), right after it is sent (the host commits it after the
 * sender is dead) and after the host's reply (committed and acknowledged), for every occurrence
 * of every kind in the workflow. The host (in-process supervision, real store, real workers)
 * must bring every run to its expected end with the retry-safety rule intact.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fingerprint } from "../../src/protocol/canonical-json.ts";
import { cancelRun } from "../../src/state/transitions/run-commands.ts";
import { inPsPass } from "../support/ps-pass.ts";
import { createHarness, type Harness, isTerminal } from "../support/supervision.ts";
import { CRASH_WORKFLOW_SOURCE, executions, retryViolations } from "./crash-workflow.ts";

/** Message kind and how often it occurs in one pass of the crash workflow. */
const OCCURRENCES: [string, number][] = [
  ["worker.ready", 1],
  ["node.started", 4],
  ["node.update", 2],
  ["node.finished", 3],
  ["node.failed", 1],
  ["run.finished", 1],
  ["worker.exiting", 1],
];
const MOMENTS = ["beforeSend", "afterSend", "afterReply"];

/** Crashing while the external action `two` is open in the database blocks the run. */
function expectsBlocked(point: string): boolean {
  return point === "worker.node.started.afterSend#2" ||
    point === "worker.node.started.afterReply#2" ||
    point.startsWith("worker.node.update.") ||
    point === "worker.node.finished.beforeSend#2";
}

const EVERY_POINT = OCCURRENCES.flatMap(([kind, count]) =>
  Array.from({ length: count }, (_, i) => i + 1).flatMap((n) =>
    MOMENTS.map((moment) => `worker.${kind}.${moment}#${n}`)
  )
);

/**
 * The ps pass's points: each moment once, one that blocks the run, one after the terminal
 * commit. Every point is the worker's SIGKILL of itself and the supervision's answer to its exit
 * (a fresh worker named by its start, or the run parked), the same process-table reads at each;
 * what differs between points is what the host had committed, which every point checks under
 * the platform's backend.
 */
const PS_POINTS = [
  "worker.node.started.beforeSend#1",
  "worker.node.started.afterSend#2",
  "worker.node.finished.afterReply#1",
  "worker.worker.exiting.afterSend#1",
];
const POINTS = inPsPass ? EVERY_POINT.filter((p) => PS_POINTS.includes(p)) : EVERY_POINT;

let h: Harness;
const runs = new Map<string, { point: string; side: string; marker: string }>();

beforeAll(async () => {
  const env = new Map<string, NodeJS.ProcessEnv>();
  h = await createHarness({ maxConcurrentWorkers: 4 }, {
    childEnv: (runId) => (runId ? env.get(runId) ?? {} : {}),
  });
  // One workflow file, resolved once by the real resolver; each run gets its own side channel.
  const path = h.writeWorkflow("crashy.workflow.ts", CRASH_WORKFLOW_SOURCE);
  const base = await h.supervision.resolve({
    workflow: path,
    input: { side: "/" },
    cwd: h.projectDir,
  });
  if (!base.ok) throw new Error(`Resolve failed: ${base.message}`);
  for (const [i, point] of POINTS.entries()) {
    const side = join(h.root, `side-${i}.log`);
    const marker = join(h.root, `crashed-${i}`);
    const input = { side };
    const runId = h.enqueueResolved({ ...base, input, inputHash: fingerprint(input) });
    env.set(runId, { PI_WORKFLOWS_CRASH_AT: point, PI_WORKFLOWS_CRASH_ONCE: marker });
    runs.set(runId, { point, side, marker });
  }
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe(`worker SIGKILL at ${POINTS.length} durable boundaries`, () => {
  it("every run reaches its expected end; only uncommitted pure work repeats", async () => {
    // Settled: terminal, or blocked for an operator; and the crash point was reached (for
    // worker.exiting that happens after the terminal commit).
    const settled = (marker: string) => (run: ReturnType<Harness["run"]>) =>
      (isTerminal(run) || (run.blockedReason !== null && run.queueState === "parked")) &&
      existsSync(marker);
    for (const [runId, s] of runs) {
      const run = await h.waitForRun(runId, settled(s.marker), 90_000);
      expect(existsSync(s.marker), `${s.point} was reached`).toBe(true);
      if (expectsBlocked(s.point)) {
        expect([run.state, run.blockedReason], s.point).toEqual(["running", "effectAmbiguous"]);
        // An operator decides; cancelling settles it for good.
        cancelRun(h.store, { runId, claim: h.supervision.claimOf(runId) });
        expect(h.run(runId).state).toBe("cancelled");
      } else {
        expect([run.state, run.output, run.error], s.point).toEqual([
          "completed",
          { total: 3 },
          null,
        ]);
        expect(executions(s.side).get("two"), s.point).toBe(1);
      }
      expect(retryViolations(h.store, runId, s.side), s.point).toEqual([]);
    }
    expect(h.invariants()).toEqual([]);
  }, 180_000);
});

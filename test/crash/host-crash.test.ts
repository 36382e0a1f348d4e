/**
 * SIGKILL the HOST process at each of its commit points (before and after it commits each
 * worker message, after it claims a run for launch, after it records a worker exit), then start
 * a fresh host on the same state file. The new host waits out the dead host's claims, recovers,
 * and must bring the run to its expected end with the retry-safety rule intact.
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { removeTempRoot } from "../support/temp-root.ts";
import { killCrashHosts, runCrashHost } from "./crash-host.ts";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { readRun } from "../../src/state/queries.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { cancelRun } from "../../src/state/transitions/run-commands.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { loadWorkflow } from "../../src/workflows/sources/load-workflow.ts";
import { normalizeWorkflowInput } from "../../src/workflows/sources/workflow-input.ts";
import { CRASH_WORKFLOW_SOURCE, executions, retryViolations } from "./crash-workflow.ts";
import { shareWorkerCompileCache } from "../support/worker-compile-cache.ts";

const OCCURRENCES: [string, number][] = [
  ["worker.ready", 1],
  ["node.started", 4],
  ["node.update", 2],
  ["node.finished", 3],
  ["node.failed", 1],
  ["run.finished", 1],
  ["worker.exiting", 1],
];
const POINTS = [
  "host.launch.afterClaim#1",
  ...OCCURRENCES.flatMap(([kind, count]) =>
    Array.from({ length: count }, (_, i) => i + 1).flatMap((n) => [
      `host.${kind}.beforeCommit#${n}`,
      `host.${kind}.afterCommit#${n}`,
    ])
  ),
  "host.exit.afterEpoch#1",
];

/** The host died while the external action `two` was open in the database. */
function expectsBlocked(point: string): boolean {
  return point === "host.node.started.afterCommit#2" || point.startsWith("host.node.update.") ||
    point === "host.node.finished.beforeCommit#2";
}

const roots: string[] = [];
afterAll(async () => {
  await killCrashHosts();
  for (const root of roots) await removeTempRoot(root);
});

async function crashAndRecover(point: string) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "piw-crash-")));
  roots.push(root);
  const stateDir = join(root, "state");
  shareWorkerCompileCache(stateDir);
  const projectDir = join(root, "project");
  mkdirSync(projectDir, { recursive: true });
  const path = join(projectDir, "crashy.workflow.ts");
  writeFileSync(path, CRASH_WORKFLOW_SOURCE);
  const side = join(root, "side.log");
  const loaded = await loadWorkflow(path, { cwd: projectDir });
  const { input, inputHash } = normalizeWorkflowInput(loaded.workflow, { side });
  const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds });
  try {
    const { runId } = enqueueRun(store, {
      workflowName: loaded.workflow.name,
      workflowRef: path,
      projectPath: projectDir,
      workflowSource: loaded.identity.workflowSource as never,
      definitionDigest: loaded.identity.definitionDigest,
      input,
      inputHash,
      binding: { executionMode: "headless" },
    });
    const marker = join(root, "crashed");
    const env = {
      PI_WORKFLOWS_CRASH_AT: point,
      PI_WORKFLOWS_CRASH_ONCE: marker,
      PI_CODING_AGENT_DIR: join(root, "agent"),
    };
    const first = await runCrashHost(stateDir, env, 30_000);
    expect(first.signal, `${point}: the first host was killed\n${first.stderr}`).toBe("SIGKILL");
    expect(existsSync(marker)).toBe(true);
    const second = await runCrashHost(stateDir, env, 45_000);
    expect(second.code, `${point}: the second host finished\n${second.stderr}`).toBe(0);

    const run = readRun(store, runId)!;
    if (expectsBlocked(point)) {
      expect([run.state, run.blockedReason], point).toEqual(["running", "effectAmbiguous"]);
      cancelRun(store, { runId, claim: null });
    } else {
      expect([run.state, run.output, run.error], point).toEqual(["completed", { total: 3 }, null]);
    }
    expect(executions(side).get("two") ?? 0, point).toBeLessThanOrEqual(1);
    expect(retryViolations(store, runId, side), point).toEqual([]);
    expect(checkInvariants(store), point).toEqual([]);
  } finally {
    closeStateStore(store);
  }
}

describe(`host SIGKILL at ${POINTS.length} commit points`, () => {
  // Four independent hosts at a time: each pair of processes owns its own state directory.
  const batches: string[][] = [];
  for (let i = 0; i < POINTS.length; i += 4) batches.push(POINTS.slice(i, i + 4));
  for (const batch of batches) {
    it(`recovers after ${batch.join(", ")}`, async () => {
      await Promise.all(batch.map((point) => crashAndRecover(point)));
    }, 120_000);
  }
});

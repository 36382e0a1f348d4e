import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createSupervision } from "../../../src/host/host-supervision.ts";
import {
  formatStartIdentity,
  isSameProcessAliveNow,
  readProcessIdentityNow,
  signalGroup,
} from "../../../src/os/process-identity.ts";
import { waitUntil } from "../../../src/os/stop-group.ts";
import { FakeClock, sequentialIds } from "../../../src/base/clock.ts";
import { checkInvariants } from "../../../src/state/invariants.ts";
import { listActiveWorkers, readRun } from "../../../src/state/queries.ts";
import { closeStateStore, openStateStore, type StateStore } from "../../../src/state/store.ts";
import { queryAll } from "../../../src/state/statements.ts";
import { ClaimLostError } from "../../../src/state/errors.ts";
import { acquireHostClaim } from "../../../src/state/host-claim.ts";
import { cancelRun } from "../../../src/state/transitions/run-commands.ts";
import { enqueueRun } from "../../../src/state/transitions/run-enqueue.ts";
import {
  claimRunForLaunch,
  markWorkerLive,
  nextLaunchableRuns,
} from "../../../src/state/transitions/run-launch.ts";
import { reapRecordedChildGroups } from "../../../src/host/supervision/child-groups.ts";
import { processBackend, useProcessBackend } from "../../../src/os/process-backend.ts";
import { ProcessTableUnavailable } from "../../../src/os/process-table.ts";
import { listChildGroups } from "../../../src/state/transitions/child-groups.ts";
import { createHarness, FAST_OPTIONS, testWorkerCommand } from "../../support/supervision.ts";
import { removeTempRoot } from "../../support/temp-root.ts";

const children: ChildProcess[] = [];
const roots: string[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // gone
    }
  }
  for (const root of roots.splice(0)) await removeTempRoot(root);
});

async function sleeper() {
  const child = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
  children.push(child);
  await waitUntil(() => readProcessIdentityNow(child.pid!) !== null, 5_000);
  return readProcessIdentityNow(child.pid!)!;
}

function enqueue(store: StateStore): string {
  const digest = `sha256:${"0".repeat(64)}`;
  return enqueueRun(store, {
    workflowName: "w",
    workflowRef: "/p/w.workflow.ts",
    projectPath: "/p",
    workflowSource: { root: { kind: "file", path: "/p/w.workflow.ts", hash: digest }, mounted: [] },
    definitionDigest: digest,
    input: {},
    inputHash: digest,
    binding: { executionMode: "headless" },
  }).runId;
}

/** A worker epoch an earlier host recorded live, with the given process identity. */
function staleEpoch(
  store: StateStore,
  hostEpoch: number,
  runId: string,
  pid: number,
  startIdentity: string,
) {
  const { claim } = claimRunForLaunch(store, {
    runId,
    ownerId: "old-host",
    hostEpoch,
    token: "old-token",
    // Far from expiry: only the newer host epoch fences these claims.
    ttlMs: 3_600_000,
    workerEpoch: `wep-${runId}`,
    launchEnvelopeHash: `sha256:${"1".repeat(64)}`,
  });
  markWorkerLive(store, claim, { workerEpoch: `wep-${runId}`, pid, startIdentity });
}

describe("recover() after a host restart", () => {
  it("reaps only exact stale identities and makes expired runs claimable again", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "piw-recover-")));
    roots.push(root);
    const clock = new FakeClock(Date.now());
    const store = openStateStore({ stateDir: join(root, "state"), clock, ids: sequentialIds() });
    try {
      const unrelated = await sleeper();
      const leftover = await sleeper();
      const reused = enqueue(store);
      const orphan = enqueue(store);
      const abandoned = enqueue(store);
      const oldHost = acquireHostClaim(store, { ownerId: "old-host", token: "o", ttlMs: 1_000 });
      // The PID of a live unrelated process, recorded with another start time: a reused PID.
      staleEpoch(
        store,
        oldHost.epoch,
        reused,
        unrelated.pid,
        `${unrelated.pid}:${BigInt(unrelated.startTime) - 7n}`,
      );
      staleEpoch(store, oldHost.epoch, orphan, leftover.pid, formatStartIdentity(leftover));
      staleEpoch(store, oldHost.epoch, abandoned, 2 ** 22 + 11, `${2 ** 22 + 11}:1`);
      // While the old host holds its epoch, nobody cancels its live claims through the stale path.
      expect(() => cancelRun(store, { runId: abandoned, claim: null })).toThrow(
        ClaimLostError,
      );
      clock.advance(2_000); // the old host's lease lapses; its run claims have an hour left
      const newHost = acquireHostClaim(store, { ownerId: "new-host", token: "n", ttlMs: 60_000 });
      // The new epoch fences the old host's run claims at once: cancel takes a control claim.
      cancelRun(store, { runId: abandoned, claim: null });
      expect(readRun(store, abandoned)!.state).toBe("cancelled");

      const supervision = createSupervision({
        store,
        clock,
        ids: sequentialIds(),
        stateDir: join(root, "state"),
        hostEpoch: newHost.epoch,
        hostOwnerId: "new-host",
        log: () => {},
        options: FAST_OPTIONS,
      });
      await supervision.recover();

      expect(isSameProcessAliveNow(unrelated)).toBe(true);
      expect(await waitUntil(() => !isSameProcessAliveNow(leftover), 5_000)).toBe(true);
      expect(listActiveWorkers(store)).toEqual([]);
      const statuses = queryAll<{ status: string }>(store, "SELECT status FROM run_workers")
        .map((r) => r.status);
      expect(statuses.sort()).toEqual(["orphaned", "orphaned", "orphaned"]);
      for (const runId of [reused, orphan]) {
        const run = readRun(store, runId)!;
        expect([run.state, run.queueState, run.blockedReason]).toEqual(["running", "parked", null]);
      }
      expect(nextLaunchableRuns(store, 10).map((r) => r.runId)).toEqual([reused, orphan]);
      expect(checkInvariants(store)).toEqual([]);
      await supervision.shutdown();
    } finally {
      closeStateStore(store);
    }
  });

  it("reaps a child group the worker registered when the worker dies first", async () => {
    const fixture = join(import.meta.dirname, "fixtures", "registering-worker.ts");
    const h = await createHarness({}, {
      maxCrashes: 1,
      workerCommand: (args) =>
        args.includes("--resolve")
          ? testWorkerCommand(args)
          : { command: process.execPath, args: [fixture] },
    });
    let child = 0;
    try {
      const runId = await h.startRun(h.writeWorkflow(
        "one.workflow.ts",
        `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({ name: "one", startAt: "a", nodes: { a: compute({ run: () => 1 }) }, edges: [] });`,
      ));
      await h.waitForRun(runId, (r) => r.state === "failed");
      await waitUntil(() => h.supervision.activeWorkerCount() === 0, 10_000);
      const line = h.workerLogs().split("\n").find((l) => l.startsWith("{"));
      const report = JSON.parse(line!) as { child: number; refused: string; accepted: string };
      child = report.child;
      expect(report.refused).toBe("rejected");
      expect(report.accepted).toBe("accepted");
      expect(await waitUntil(() => readProcessIdentityNow(report.child) === null, 10_000)).toBe(
        true,
      );
    } finally {
      const left = child ? readProcessIdentityNow(child) : null;
      if (left) void signalGroup(left, "SIGKILL"); // only if the host failed to reap it
      await h.close();
    }
  });

  it("keeps the record of a registered group whose stop gave up, for the next host", async () => {
    const fixture = join(import.meta.dirname, "fixtures", "registering-worker.ts");
    const h = await createHarness({}, {
      maxCrashes: 1,
      workerCommand: (args) =>
        args.includes("--resolve")
          ? testWorkerCommand(args)
          : { command: process.execPath, args: [fixture] },
    });
    // Once the group is recorded, no process table (a failing `ps`): its stop cannot finish.
    const real = processBackend();
    let restore: (() => void) | null = useProcessBackend({
      ...real,
      table: (options) =>
        listChildGroups(h.store).length === 0
          ? real.table(options)
          : Promise.reject(new ProcessTableUnavailable("no table")),
    });
    let child = 0;
    try {
      const runId = await h.startRun(h.writeWorkflow(
        "one.workflow.ts",
        `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({ name: "one", startAt: "a", nodes: { a: compute({ run: () => 1 }) }, edges: [] });`,
      ));
      await h.waitForRun(runId, (r) => r.state === "failed");
      expect(await waitUntil(() => h.supervision.activeWorkerCount() === 0, 15_000)).toBe(true);
      const line = h.workerLogs().split("\n").find((l) => l.startsWith("{"));
      child = (JSON.parse(line!) as { child: number }).child;
      const left = readProcessIdentityNow(child)!;
      expect(listChildGroups(h.store)).toEqual([expect.objectContaining(left)]);
      restore();
      restore = null;
      // The next host's recovery stops it by that record.
      expect(await reapRecordedChildGroups(h.store, 200)).toBe(1);
      expect(await waitUntil(() => readProcessIdentityNow(child) === null, 5_000)).toBe(true);
      expect(listChildGroups(h.store)).toEqual([]);
    } finally {
      restore?.();
      const left = child ? readProcessIdentityNow(child) : null;
      if (left) void signalGroup(left, "SIGKILL");
      await h.close();
    }
  });
});

/**
 * A worker's process is named in `run_workers` at spawn (not only at `worker.ready`), so a host
 * restart can reap a worker that never got ready; and a spawn that fails after the launch claim
 * settles the run at once, counted like a crash, instead of leaving it `starting` until the
 * claim expires and retrying forever.
 */
import { afterEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../src/os/stop-group.ts";
import { isSameProcessAlive, parseStartIdentity } from "../../src/os/process-identity.ts";
import { queryAll } from "../../src/state/store.ts";
import { reapStaleWorkers } from "../../src/host/supervision/recovery.ts";
import { createHarness, type Harness, isTerminal, testWorkerCommand } from "./harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const WORKFLOW = `
import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "w",
  startAt: "a",
  nodes: { a: compute({ run: () => ({ ok: true }) }) },
  edges: [],
});
`;

/** A worker that never sends `worker.ready`: it sleeps until it is killed. */
const SILENT = ["-e", "setInterval(() => {}, 60_000)"];

function epochs(h: Harness, runId: string) {
  return queryAll<{ status: string; pid: number | null; start_identity: string | null }>(
    h.store,
    "SELECT status, pid, start_identity FROM run_workers WHERE run_id = :runId ORDER BY started_at",
    { runId },
  );
}

describe("worker spawn", () => {
  it("records the worker's pid and start identity before it is ready", async () => {
    h = await createHarness({ workerStartupMs: 60_000 }, {
      workerCommand: (args) =>
        args.includes("--resolve") ? testWorkerCommand(args) : {
          command: process.execPath,
          args: SILENT,
        },
    });
    const runId = await h.startRun(h.writeWorkflow("w.workflow.ts", WORKFLOW));
    expect(await waitUntil(() => epochs(h!, runId).length === 1, 20_000)).toBe(true);
    const [epoch] = epochs(h, runId);
    expect(epoch.status).toBe("starting");
    const identity = parseStartIdentity(epoch.start_identity);
    expect(identity).not.toBeNull();
    expect(identity!.pid).toBe(epoch.pid);
    // The recorded identity is the live (not yet ready) worker itself.
    expect(isSameProcessAlive(identity!)).toBe(true);
    // What a restarted host's recovery does with it: reaped by that exact identity.
    expect(await reapStaleWorkers(h.ctx)).toBe(1);
    expect(await waitUntil(() => !isSameProcessAlive(identity!), 10_000)).toBe(true);
    expect(["orphaned", "crashed"]).toContain(epochs(h, runId)[0].status);
  });

  it("a spawn that fails after the launch claim fails the run at once, counted like crashes", async () => {
    h = await createHarness({ claimTtlMs: 60_000 }, {
      maxCrashes: 3,
      // A NUL byte in an argument: spawn() throws synchronously, after the claim was taken.
      workerCommand: (args) =>
        args.includes("--resolve") ? testWorkerCommand(args) : {
          command: process.execPath,
          args: ["bad\0arg"],
        },
    });
    const started = Date.now();
    const runId = await h.startRun(h.writeWorkflow("w.workflow.ts", WORKFLOW));
    const run = await h.waitForRun(runId, isTerminal, 30_000);
    // Far below the 60 s claim lease the old path waited out before each retry.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(run.state).toBe("failed");
    expect(run.error).toEqual({
      code: "workerCrashed",
      message: "The run's worker could not be started (ERR_INVALID_ARG_VALUE), 3 times in a row",
    });
    expect(epochs(h, runId).map((e) => e.status)).toEqual(["crashed", "crashed", "crashed"]);
    expect(h.logs.filter((line) => line.startsWith("worker.spawn_failed"))).toHaveLength(3);
    expect(h.invariants()).toEqual([]);
  });
});

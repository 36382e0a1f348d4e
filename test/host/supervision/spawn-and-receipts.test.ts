/**
 * A worker's process is named in `run_workers` at spawn (not only at `worker.ready`), so a host
 * restart can reap a worker that never got ready; and a spawn that fails after the launch claim
 * settles the run at once, counted like a crash, instead of leaving it `starting` until the
 * claim expires and retrying forever.
 */
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitUntil } from "../../../src/os/stop-group.ts";
import { isSameProcessAliveNow, parseStartIdentity } from "../../../src/os/process-identity.ts";
import { queryAll } from "../../../src/state/statements.ts";
import { reapStaleWorkers } from "../../../src/host/supervision/recovery.ts";
import { cancelRun } from "../../../src/state/transitions/run-commands.ts";
import { type Harness, isTerminal, testWorkerCommand } from "../../support/supervision.ts";
import { harnessPerTest } from "../../support/harness-per-test.ts";

const newHarness = harnessPerTest();

const WORKFLOW = `
import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "w",
  startAt: "a",
  nodes: { a: compute({ run: () => ({ ok: true }) }) },
  edges: [],
});
`;

const REPLAY = join(import.meta.dirname, "fixtures", "replay-worker.ts");

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
    const h = await newHarness({ workerStartupMs: 60_000 }, {
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
    expect(isSameProcessAliveNow(identity!)).toBe(true);
    // What a restarted host's recovery does with it: reaped by that exact identity.
    expect(await reapStaleWorkers(h.ctx)).toBe(1);
    expect(await waitUntil(() => !isSameProcessAliveNow(identity!), 10_000)).toBe(true);
    expect(["orphaned", "crashed"]).toContain(epochs(h, runId)[0].status);
  });

  it("a spawn that fails after the launch claim fails the run at once, counted like crashes", async () => {
    const h = await newHarness({ claimTtlMs: 60_000 }, {
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

describe("durable replays of worker messages", () => {
  it("answer with the full first answer: facts for worker.ready, the reservation for effect.reserve", async () => {
    const out = join(tmpdir(), `piw-replay-${process.pid}-${Date.now()}.jsonl`);
    const h = await newHarness({}, {
      maxCrashes: 1,
      childEnv: { REPLAY_OUT: out },
      workerCommand: (args) =>
        args.includes("--resolve") ? testWorkerCommand(args) : {
          command: process.execPath,
          args: [REPLAY],
        },
    });
    try {
      const runId = await h.startRun(
        h.writeWorkflow("w.workflow.ts", WORKFLOW.replaceAll("compute", "action")),
      );
      await h.waitForRun(runId, isTerminal, 30_000);
      const replies = readFileSync(out, "utf8").trim().split("\n").map((line) => JSON.parse(line));
      const byLabel = (label: string) =>
        replies.filter((r) => r.label === label).map((r) => r.reply);
      const [ready] = byLabel("ready");
      const [readyAgain] = byLabel("ready again");
      expect(ready.outcome).toBe("accepted");
      expect(ready.factsChunk).toBeDefined();
      expect(readyAgain).toEqual(ready);
      const [reserve] = byLabel("reserve");
      const [reserveAgain] = byLabel("reserve again");
      expect(reserve).toMatchObject({ outcome: "accepted", result: { state: "reserved" } });
      expect(reserveAgain).toEqual(reserve);
      // Nothing was applied twice: one effect, one reservation.
      expect(queryAll(h.store, "SELECT effect_id FROM effects")).toHaveLength(1);
    } finally {
      rmSync(out, { force: true });
    }
  });
});

describe("worker-message receipts", () => {
  // A message's receipt is the event it produced (request id and fingerprint in the event row).
  const workerReceipts = (h: Harness, runId: string, type?: string) =>
    queryAll<{ type: string }>(
      h.store,
      "SELECT type FROM events WHERE run_id = :runId AND request_id IS NOT NULL ORDER BY seq",
      { runId },
    ).filter((r) => type === undefined || r.type === type);

  const UPDATES = (finish: boolean) => `
import { action, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "u",
  startAt: "a",
  nodes: {
    a: action({
      run: async ({ publishUpdate }) => {
        for (let i = 0; i < 3; i++) publishUpdate({ type: "note", key: "k" + i, data: { i } });
        ${
    finish ? "return { done: true };" : "await new Promise(() => setInterval(() => {}, 60_000));"
  }
      },
    }),
  },
  edges: [],
});
`;

  it("node.update has a receipt in its event; the end of the run keeps them with the events", async () => {
    const h = await newHarness();
    const runId = await h.startRun(h.writeWorkflow("u.workflow.ts", UPDATES(false)));
    expect(
      await waitUntil(() => workerReceipts(h!, runId, "node.update").length === 3, 20_000),
    ).toBe(true);
    const live = workerReceipts(h, runId).length;
    expect(live).toBeGreaterThan(3);
    expect(
      queryAll(
        h.store,
        "SELECT 1 FROM host_commands c JOIN events e ON e.request_id = c.request_id",
      ),
    )
      .toEqual([]);
    cancelRun(h.store, { runId, claim: h.supervision.claimOf(runId) });
    expect(workerReceipts(h, runId)).toHaveLength(live);
    expect(h.invariants()).toEqual([]);
  });

  it("every accepted worker message of a completed run has its receipt in its event", async () => {
    const h = await newHarness();
    const runId = await h.startRun(h.writeWorkflow("u.workflow.ts", UPDATES(true)));
    const run = await h.waitForRun(runId, isTerminal);
    expect(run.state, JSON.stringify(run.error)).toBe("completed");
    const types = workerReceipts(h, runId).map((r) => r.type);
    expect(types.filter((t) => t === "node.update")).toHaveLength(3);
    expect(types.at(-1)).toBe("run.completed");
  });
});

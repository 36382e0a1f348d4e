import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitUntil } from "../../../src/os/stop-group.ts";
import { queryAll, queryOne } from "../../../src/state/statements.ts";
import { cancelRun } from "../../../src/state/transitions/run-commands.ts";
import { isTerminal, testWorkerCommand } from "../../support/supervision.ts";
import { harnessPerTest } from "../../support/harness-per-test.ts";

const newHarness = harnessPerTest();

const quick = `
import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "quick",
  startAt: "a",
  nodes: { a: compute({ run: async ({ input }) => { await new Promise((r) => setTimeout(r, 100)); return input; } }) },
  edges: [],
});
`;

describe("scheduler", () => {
  it("respects the concurrency limit and launches in creation order", async () => {
    const h = await newHarness({ maxConcurrentWorkers: 1 });
    const path = h.writeWorkflow("quick.workflow.ts", quick);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await h.startRun(path, { i }));
    for (const id of ids) expect((await h.waitForRun(id, isTerminal)).state).toBe("completed");
    const epochs = queryAll<{ run_id: string; started_at: number; finished_at: number }>(
      h.store,
      "SELECT run_id, started_at, finished_at FROM run_workers ORDER BY started_at",
    );
    expect(epochs.map((e) => e.run_id)).toEqual(ids);
    for (let i = 1; i < epochs.length; i++) {
      expect(epochs[i].started_at).toBeGreaterThanOrEqual(epochs[i - 1].finished_at);
    }
  });

  it("keeps renewing the claim of a worker that spins on the CPU", async () => {
    const h = await newHarness({ claimTtlMs: 1_200, claimRenewMs: 250 });
    const marker = join(h.root, "spinning");
    const runId = await h.startRun(h.writeWorkflow(
      "cpu.workflow.ts",
      `import { writeFileSync } from "node:fs";
import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "cpu",
  startAt: "a",
  nodes: { a: compute({ timeoutMs: null, run: () => { writeFileSync(${
        JSON.stringify(marker)
      }, ""); for (;;) {} } }) },
  edges: [],
});`,
    ));
    expect(await waitUntil(() => existsSync(marker), 15_000)).toBe(true);
    const lease = () =>
      queryOne<{ generation: number; expires_at: number | null }>(
        h!.store,
        "SELECT generation, expires_at FROM leases WHERE run_id = :runId",
        { runId },
      )!;
    const generation = lease().generation;
    const until = Date.now() + 3 * 1_200;
    // Over three lease lengths the claim never lapses and never changes hands.
    const lapsed = await waitUntil(() => {
      const l = lease();
      return l.expires_at === null || l.expires_at <= Date.now() || l.generation !== generation ||
        Date.now() > until;
    }, 5_000);
    expect(lapsed).toBe(true);
    expect(Date.now()).toBeGreaterThan(until);
    expect(lease().generation).toBe(generation);
    expect(h.run(runId).queueState).toBe("running");
    cancelRun(h.store, { runId, claim: h.supervision.claimOf(runId) });
    await h.supervision.stopRun(runId, "cancelled");
    expect(h.run(runId).state).toBe("cancelled");
  });

  it("cuts a fast writer's output at the cap and fails its attempt saying so", async () => {
    const h = await newHarness({ maxCapturedOutputBytes: 64 * 1024 }, { maxCrashes: 1 });
    // 32 MiB as fast as one synchronous loop writes it, then a long wait: only the cap may land.
    const runId = await h.startRun(h.writeWorkflow(
      "loud.workflow.ts",
      `import { writeSync } from "node:fs";
import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "loud",
  startAt: "a",
  nodes: { a: compute({ run: async () => {
    const chunk = "x".repeat(64 * 1024);
    try { for (let i = 0; i < 512; i++) writeSync(1, chunk); } catch {}
    await new Promise((r) => setTimeout(r, 30_000));
  } }) },
  edges: [],
});`,
    ));
    const run = await h.waitForRun(runId, isTerminal);
    expect(run.state).toBe("failed");
    expect(run.error?.code).toBe("outputLimitExceeded");
    expect(run.error?.message).toBe(
      "The worker wrote more than 65536 bytes to its stdout: the rest was cut and the worker " +
        "was stopped (write less, or raise PI_WORKFLOWS_WORKER_OUTPUT_BYTES)",
    );
    const attempts = queryAll<{ state: string; error_code: string }>(
      h.store,
      "SELECT state, error_code FROM node_attempts WHERE run_id = :runId ORDER BY sequence",
      { runId },
    );
    expect(attempts).toEqual([{ state: "failed", error_code: "outputLimitExceeded" }]);
    // The relaunched worker that failed the run wrote nothing: its empty files go at its exit.
    expect(await waitUntil(() => h!.supervision.activeWorkerCount() === 0, 10_000)).toBe(true);
    const logs = join(h.stateDir, "workers");
    const out = readdirSync(logs).filter((name) => name.endsWith(".out"));
    expect(out).toHaveLength(1);
    const text = readFileSync(join(logs, out[0]), "utf8");
    expect(text.length).toBeLessThan(64 * 1024 + 200);
    expect(text).toMatch(
      /\n\[pi-workflows: output cut here at 65536 bytes; the process was stopped\]\n$/,
    );
    expect(h.invariants()).toEqual([]);
  });

  it("fails a node that writes past the cap in one burst and returns at once", async () => {
    // The default cap (4 MiB): the host takes longer to read up to it than the node to return.
    const h = await newHarness({}, { maxCrashes: 1 });
    // 8 MiB handed to stdout at once, the node returning without waiting: the worker's
    // stream holds what the pipe has not taken yet, so the result must not outrun the output.
    const runId = await h.startRun(h.writeWorkflow(
      "burst.workflow.ts",
      `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "burst",
  startAt: "a",
  nodes: { a: compute({ run: () => { process.stdout.write("x".repeat(8 * 1024 * 1024)); return 1; } }) },
  edges: [],
});`,
    ));
    const run = await h.waitForRun(runId, isTerminal);
    expect(run.state).toBe("failed");
    expect(run.error?.code).toBe("outputLimitExceeded");
    expect(h.invariants()).toEqual([]);
  });

  it("fails a worker epoch that never says worker.ready before the startup deadline", async () => {
    const h = await newHarness({}, {
      maxCrashes: 1,
      workerCommand: (args) =>
        args.includes("--resolve") ? testWorkerCommand(args) : { command: "sleep", args: ["300"] },
    });
    const path = h.writeWorkflow("quick.workflow.ts", quick);
    const resolved = await h.supervision.resolve({ workflow: path, input: {}, cwd: h.projectDir });
    h.ctx.options.workerStartupMs = 500; // the resolver had the normal deadline; workers get 500 ms
    const runId = h.enqueueResolved(resolved);
    const run = await h.waitForRun(runId, isTerminal);
    expect(run.state).toBe("failed");
    expect(run.error?.code).toBe("workerTimedOut");
    const statuses = queryAll<{ status: string }>(
      h.store,
      "SELECT status FROM run_workers WHERE run_id = :runId",
      { runId },
    ).map((r) => r.status);
    expect(statuses).toEqual(["timedOut"]);
    expect(h.invariants()).toEqual([]);
  });
});

/**
 * The compile cache warm-up the host starts once it is ready (compile-cache-warmup.ts): it fills
 * a new state directory's cache once, in the background at the lowest priority; a stuck one never
 * holds up a run's worker and is killed at its bound or at shutdown.
 */
import { existsSync, readdirSync } from "node:fs";
import { getPriority } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createSupervision } from "../../../src/host/host-supervision.ts";
import { readProcessIdentityNow } from "../../../src/os/process-identity.ts";
import { waitUntil } from "../../../src/os/stop-group.ts";
import type { SupervisionExtras } from "../../../src/host/host-supervision.ts";
import { enqueueRun } from "../../../src/state/transitions/run-enqueue.ts";
import { resolvedRunFields } from "../../../src/host/resolved-run.ts";
import { type Harness, isTerminal, testWorkerCommand } from "../../support/supervision.ts";
import { harnessPerTest } from "../../support/harness-per-test.ts";

const ONE_NODE = `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "one",
  startAt: "a",
  nodes: { a: compute({ run: () => 1 }) },
  edges: [],
});
`;

/** Worker modes as usual; the warm-up is a process that never ends by itself. */
const stuckWarmup: SupervisionExtras["workerCommand"] = (args) =>
  args[1] === "--warm"
    ? { command: process.execPath, args: ["-e", "setInterval(() => {}, 60_000)"] }
    : testWorkerCommand(args);

/** Each test starts from a new state directory's empty cache, not the tests' shared one. */
const OWN_CACHE = { ownCompileCache: true };

const newHarness = harnessPerTest();

/** The fields of the first log line of `event`, waiting for it (deadline `ms`). */
async function logged(harness: Harness, event: string, ms = 30_000) {
  const find = () => harness.logs.find((line) => line.startsWith(`${event} `));
  if (!await waitUntil(() => find() !== undefined, ms)) {
    throw new Error(`No ${event} within ${ms} ms; logged:\n${harness.logs.join("\n")}`);
  }
  return JSON.parse(find()!.slice(event.length + 1)) as Record<string, unknown>;
}

const alive = (pid: number) => readProcessIdentityNow(pid) !== null;

describe("compile cache warm-up", () => {
  it("fills a new state directory's cache once", async () => {
    const h = await newHarness({}, {}, undefined, OWN_CACHE);
    h.supervision.warmCompileCache();
    const cache = join(h.stateDir, "compile-cache");
    await logged(h, "compile_cache.warming");
    await logged(h, "compile_cache.warmed");
    expect(readdirSync(cache)).toContain("warmed.json");
    // Node's own entries (one directory per Node version) hold the loaded modules.
    const entries = readdirSync(cache).filter((name) => name !== "warmed.json");
    expect(entries.length).toBeGreaterThan(0);
    expect(readdirSync(join(cache, entries[0])).length).toBeGreaterThan(50);

    // The next start on the same cache does not warm it again.
    const again = createSupervision(h.ctx, { workerCommand: testWorkerCommand });
    again.start();
    again.warmCompileCache();
    expect(await logged(h, "compile_cache.warmup_skipped")).toEqual({ reason: "alreadyWarm" });
    await again.shutdown();
  });

  it("is skipped when the host starts with a run to launch (its worker fills the cache)", async () => {
    const h = await newHarness({}, { workerCommand: stuckWarmup }, undefined, OWN_CACHE);
    h.supervision.warmCompileCache();
    await logged(h, "compile_cache.warming");
    const path = h.writeWorkflow("one.workflow.ts", ONE_NODE);
    const resolved = await h.supervision.resolve({ workflow: path, input: {}, cwd: h.projectDir });
    if (!resolved.ok) throw new Error(resolved.message);
    // Queued without waking anyone: the next start finds it waiting.
    enqueueRun(h.store, {
      ...resolvedRunFields(resolved, h.projectDir),
      binding: { executionMode: "headless" },
    });
    const second = createSupervision(h.ctx, { workerCommand: stuckWarmup });
    second.start();
    second.warmCompileCache();
    expect(await logged(h, "compile_cache.warmup_skipped", 0)).toEqual({
      reason: "hostBusy",
    });
    // Stopped before its first scheduling tick: the run is left to the harness's supervision.
    await second.shutdown();
  });

  it("runs at the lowest priority, never holds up a run's worker, and stops at shutdown", async () => {
    const h = await newHarness(
      {},
      { workerCommand: stuckWarmup, warmupTimeoutMs: 300_000 },
      undefined,
      OWN_CACHE,
    );
    h.supervision.warmCompileCache();
    const { pid } = await logged(h, "compile_cache.warming");
    expect(alive(pid as number)).toBe(true);
    expect(getPriority(pid as number)).toBe(19);
    const runId = await h.startRun(h.writeWorkflow("one.workflow.ts", ONE_NODE));
    expect((await h.waitForRun(runId, isTerminal)).state).toBe("completed");
    // The run started, ran and ended while the warm-up still ran.
    expect(alive(pid as number)).toBe(true);
    await h.supervision.shutdown();
    expect(alive(pid as number)).toBe(false);
    expect(await logged(h, "compile_cache.warmup_stopped", 0)).toMatchObject({});
    expect(existsSync(join(h.stateDir, "compile-cache", "warmed.json"))).toBe(false);
  });

  it("is killed at its bound", async () => {
    const h = await newHarness(
      {},
      { workerCommand: stuckWarmup, warmupTimeoutMs: 300 },
      undefined,
      OWN_CACHE,
    );
    h.supervision.warmCompileCache();
    const { pid } = await logged(h, "compile_cache.warming");
    await logged(h, "compile_cache.warmup_timedOut", 10_000);
    expect(alive(pid as number)).toBe(false);
    expect(existsSync(join(h.stateDir, "compile-cache", "warmed.json"))).toBe(false);
  });
});

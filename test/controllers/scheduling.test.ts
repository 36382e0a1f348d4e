/**
 * Scheduling of reconciles in real controller workers: requeueAfter waits, errors back off
 * exponentially with jitter, a deadline requeues a reconcile that ignores its signal (a hung
 * promise, and a busy loop that blocks the worker, which the host kills), a spec change during a
 * reconcile makes its status write conflict and run again, deletion waits for finalizers, and a
 * re-pinned controller's old worker takes nothing new and goes.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryAll } from "../../src/state/statements.ts";
import { requestDeletion } from "../../src/state/controllers/resources.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import {
  type ControllerHarness,
  createControllerHarness,
  isSettled,
} from "../support/controllers.ts";

let h: ControllerHarness;
beforeAll(async () => {
  h = await createControllerHarness({ killGraceMs: 300 });
}, 30_000);
afterAll(async () => {
  await h?.close();
});

/** Lines of a log file the controller appends to (attempt times). */
function lines(path: string): string[] {
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];
}

function events(controller: string, key: string): string[] {
  return h.resource(controller, key)!.events.map((e) => e.type);
}

describe("requeue and backoff", () => {
  it("requeueAfter waits at least the asked time between reconciles", async () => {
    h.writeController(
      "ticker",
      `import { defineController } from "pi-workflows";
export default defineController({
  name: "ticker",
  initialStatus: () => ({ times: [] }),
  reconcile(ctx, resource) {
    const times = [...resource.status.controllerStatus.times, Date.now()];
    return times.length < 3
      ? ctx.requeueAfter(300, { controllerStatus: { times } })
      : ctx.settled({ controllerStatus: { times } });
  },
});`,
    );
    await h.apply("ticker", "t", {});
    const done = await h.waitForResource(
      "ticker",
      "t",
      (d) =>
        isSettled(d) &&
        (d.resource.status.controllerStatus as { times: number[] }).times.length === 3,
    );
    const times = (done.resource.status.controllerStatus as { times: number[] }).times;
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(300);
    expect(times[2] - times[1]).toBeGreaterThanOrEqual(300);
  });

  it("errors back off exponentially with jitter, and a success resets the count", async () => {
    const log = join(h.root, "flaky.log");
    h.writeController(
      "flaky",
      `import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { defineController } from "pi-workflows";
export default defineController({
  name: "flaky",
  initialStatus: () => ({}),
  reconcile(ctx, resource) {
    appendFileSync(resource.spec.log, Date.now() + "\\n");
    const n = readFileSync(resource.spec.log, "utf8").split("\\n").filter(Boolean).length;
    if (n <= 3) throw new Error("not yet (" + n + ")");
    return ctx.settled({ controllerStatus: { attempts: n } });
  },
});`,
    );
    await h.apply("flaky", "f", { log });
    const failing = await h.waitForResource("flaky", "f", (d) => d.queue?.consecutiveErrors === 2);
    expect(failing.queue?.lastError).toMatchObject({ code: "reconcileFailed" });
    expect(failing.queue?.lastError?.message).toContain("not yet");
    const done = await h.waitForResource("flaky", "f", isSettled);
    expect(done.queue?.consecutiveErrors).toBe(0);
    expect(done.queue?.lastError).toBeNull();
    const times = lines(log).map(Number);
    expect(times).toHaveLength(4);
    // Base 200 ms doubling, +-20 % jitter: at least 160, 320, 640 ms apart.
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    expect(gaps[0]).toBeGreaterThanOrEqual(160);
    expect(gaps[1]).toBeGreaterThanOrEqual(320);
    expect(gaps[2]).toBeGreaterThanOrEqual(640);
    const failed = h.resource("flaky", "f")!.events.filter((e) => e.type === "reconcile.failed");
    const delays = failed.map((e) => (e.payload as { retryDelayMs: number }).retryDelayMs);
    expect(delays).toHaveLength(3);
    expect(delays[0]).toBeGreaterThanOrEqual(160);
    expect(delays[0]).toBeLessThanOrEqual(240);
    expect(delays[2]).toBeGreaterThanOrEqual(640);
    expect(delays[2]).toBeLessThanOrEqual(960);
    expect(h.invariants()).toEqual([]);
  });
});

/**
 * The deadline is long enough for the attempt that must succeed (the first in a freshly spawned
 * worker) to finish even on a loaded machine; the attempt that must time out never ends by
 * itself, so its time-out does not race the clock. The two cases run side by side (separate
 * controllers, so separate workers) to pay the deadline once.
 */
const DEADLINE_MS = 2_000;

describe.concurrent("deadlines", () => {
  const controller = (name: string, hang: string) =>
    `import { appendFileSync, readFileSync } from "node:fs";
import { defineController } from "pi-workflows";
export default defineController({
  name: "${name}",
  timeoutMs: ${DEADLINE_MS},
  initialStatus: () => ({}),
  async reconcile(ctx, resource) {
    appendFileSync(resource.spec.log, process.pid + "\\n");
    const n = readFileSync(resource.spec.log, "utf8").split("\\n").filter(Boolean).length;
    if (n === 1) { ${hang} }
    return ctx.settled({ controllerStatus: { attempts: n } });
  },
});`;

  it("a reconcile that ignores its signal is requeued at the deadline", async () => {
    const log = join(h.root, "hang.log");
    h.writeController("hang", controller("hang", "await new Promise(() => {});"));
    const started = Date.now();
    await h.apply("hang", "h", { log });
    const done = await h.waitForResource("hang", "h", isSettled);
    expect(Date.now() - started).toBeGreaterThanOrEqual(DEADLINE_MS);
    expect(done.resource.status.controllerStatus).toEqual({ attempts: 2 });
    expect(events("hang", "h")).toEqual(
      expect.arrayContaining(["reconcile.timedOut", "reconcile.settled"]),
    );
    // The hung promise never let go: the host stopped that worker after the kill grace.
    const pids = lines(log);
    expect(pids[1]).not.toBe(pids[0]);
    expect(h.invariants()).toEqual([]);
  });

  it("a reconcile that blocks its worker's event loop is requeued; the worker is killed", async () => {
    const log = join(h.root, "spin.log");
    h.writeController("spin", controller("spin", "for (;;) {}"));
    await h.apply("spin", "s", { log });
    const done = await h.waitForResource("spin", "s", isSettled);
    expect(done.resource.status.controllerStatus).toEqual({ attempts: 2 });
    const pids = lines(log);
    expect(pids[1]).not.toBe(pids[0]);
    const epochs = queryAll<{ status: string }>(
      h.store,
      "SELECT w.status FROM controller_workers w JOIN controllers c ON c.controller_id = " +
        "w.controller_id WHERE c.name = 'spin' ORDER BY w.started_at",
    );
    expect(epochs[0].status).toBe("timedOut");
    expect(h.invariants()).toEqual([]);
  });
});

describe("compare-and-set and deletion", () => {
  it("a spec change during a reconcile makes its status write conflict; it runs again", async () => {
    const gate = join(h.root, "gate");
    const started = join(h.root, "gate-started");
    h.writeController(
      "gated",
      `import { existsSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { defineController } from "pi-workflows";
export default defineController({
  name: "gated",
  initialStatus: () => ({}),
  async reconcile(ctx, resource) {
    writeFileSync(resource.spec.started, String(resource.metadata.generation));
    while (!existsSync(resource.spec.gate)) await sleep(20, undefined, { signal: ctx.signal });
    return ctx.settled({ controllerStatus: { value: resource.spec.value } });
  },
});`,
    );
    await h.apply("gated", "g", { gate, started, value: 1 });
    expect(await waitUntil(() => existsSync(started), 20_000)).toBe(true);
    await h.apply("gated", "g", { gate, started, value: 2 });
    writeFileSync(gate, "open");
    const done = await h.waitForResource(
      "gated",
      "g",
      (d) => isSettled(d) && d.resource.status.observedGeneration === 2,
    );
    expect(done.resource.status.controllerStatus).toEqual({ value: 2 });
    expect(events("gated", "g")).toContain("reconcile.conflict");
    expect(h.invariants()).toEqual([]);
  });

  it("deletion waits until the controller cleared its finalizer, then removes the resource", async () => {
    const file = join(h.root, "owned.txt");
    h.writeController(
      "owner",
      `import { existsSync, rmSync, writeFileSync } from "node:fs";
import { defineController } from "pi-workflows";
export default defineController({
  name: "owner",
  initialStatus: () => ({}),
  async reconcile(ctx, resource) {
    const { file } = resource.spec;
    if (resource.metadata.deletionTimestamp) {
      await ctx.effects.ensure({
        key: "remove", kind: "file.remove", request: { file }, idempotent: true,
        apply: () => { rmSync(file, { force: true }); },
      });
      return ctx.settled({ finalizers: [] });
    }
    await ctx.effects.ensure({
      key: "create", kind: "file.write", request: { file },
      observe: () => (existsSync(file) ? {} : null),
      apply: () => { writeFileSync(file, "owned"); },
    });
    return ctx.settled({ controllerStatus: { owned: true }, finalizers: ["owner/cleanup"] });
  },
});`,
    );
    await h.apply("owner", "o", { file });
    const owned = await h.waitForResource("owner", "o", isSettled);
    expect(owned.resource.metadata.finalizers).toEqual(["owner/cleanup"]);
    expect(existsSync(file)).toBe(true);
    const deleting = requestDeletion(h.store, {
      projectPath: h.projectDir,
      name: "owner",
      key: "o",
    });
    expect(deleting.removed).toBe(false);
    h.supervision.controllers.wake();
    expect(await waitUntil(() => h.resource("owner", "o") === undefined, 20_000)).toBe(true);
    expect(existsSync(file)).toBe(false);
    expect(h.invariants()).toEqual([]);
  });
});

describe("re-pinning", () => {
  it("a re-pinned controller's old worker takes nothing new and goes; the new source reconciles", async () => {
    const source = (version: number) =>
      `import { defineController } from "pi-workflows";
export default defineController({
  name: "pinned",
  initialStatus: () => ({}),
  reconcile: (ctx) => ctx.settled({ controllerStatus: { version: ${version}, pid: process.pid } }),
});`;
    const status = (detail: { resource: { status: { controllerStatus?: unknown } } }) =>
      detail.resource.status.controllerStatus as { version: number; pid: number } | undefined;
    h.writeController("pinned", source(1));
    await h.apply("pinned", "p", { n: 1 });
    const first = await h.waitForResource("pinned", "p", isSettled);
    expect(status(first)?.version).toBe(1);
    h.writeController("pinned", source(2));
    // The same spec: only the re-pin makes the resource due again.
    expect((await h.apply("pinned", "p", { n: 1 })).repinned).toBe(true);
    const second = await h.waitForResource(
      "pinned",
      "p",
      (d) => isSettled(d) && status(d)?.version === 2,
    );
    expect(status(second)?.pid).not.toBe(status(first)?.pid);
    const epochs = () =>
      queryAll<{ status: string }>(
        h.store,
        "SELECT w.status FROM controller_workers w JOIN controllers c ON c.controller_id = " +
          "w.controller_id WHERE c.name = 'pinned' ORDER BY w.started_at",
      ).map((e) => e.status);
    expect(await waitUntil(() => epochs()[0] !== "live", 20_000)).toBe(true);
    expect(epochs()).toHaveLength(2);
    expect(epochs()[1]).toBe("live");
    expect(h.invariants()).toEqual([]);
  });
});

/**
 * The child kit (src/host/supervision/children/): a spawn that reads the start identity without
 * blocking the host (under the `ps` backend, macOS's), registers the child once identified,
 * one retirement order (TERM, bounded wait, KILL of the group, registry cleanup, empty logs), a
 * live child's output kept by the log budget whatever its kind, and requests answered over a
 * child's channel within their deadline.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  processBackend,
  psBackend,
  useProcessBackend,
} from "../../../../src/os/process-backend.ts";
import { ProcessTableUnavailable } from "../../../../src/os/process-table.ts";
import { FakeClock, sequentialIds } from "../../../../src/base/clock.ts";
import { closeStateStore, openStateStore } from "../../../../src/state/store.ts";
import { listHostChildren } from "../../../../src/state/transitions/host-children.ts";
import { createPsTableSource, runPs } from "../../../../src/os/ps-table.ts";
import { baseRunEnvironment } from "../../../../src/protocol/run-environment.ts";
import { DEFAULT_SUPERVISION_OPTIONS } from "../../../../src/host/supervision-options.ts";
import { pruneLogs } from "../../../../src/host/worker-log-budget.ts";
import { waitUntil } from "../../../../src/os/stop-group.ts";
import { createProcessRegistry } from "../../../../src/host/supervision/process-registry.ts";
import {
  readerOf,
  spawnChild,
  type SupervisedChild,
} from "../../../../src/host/supervision/children/spawn-child.ts";
import {
  retireChild,
  stopChildGroup,
} from "../../../../src/host/supervision/children/retire-child.ts";
import {
  type Heard,
  serveChildRequests,
} from "../../../../src/host/supervision/children/child-requests.ts";

const stateDir = mkdtempSync(join(tmpdir(), "piw-kit-"));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));
const ctx = { stateDir, options: DEFAULT_SUPERVISION_OPTIONS };

/**
 * A child that says `{"up":true}` on its channel and waits until it is stopped; with
 * `ignoreTerm` it survives SIGTERM (its handler is in place before it speaks).
 */
const waiting = (ignoreTerm: boolean) => () => ({
  command: process.execPath,
  args: [
    "-e",
    `${ignoreTerm ? "process.on('SIGTERM', () => {});" : ""}
    require("node:fs").writeSync(3, '{"up":true}\\n');
    setInterval(() => {}, 1000);`,
  ],
});

/**
 * The `ps` backend with every table read held until `open()`, and no synchronous read at all:
 * the kit must never run `ps -p` on the host's event loop.
 */
function gatedPsBackend() {
  let open = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));
  const reads = { count: 0 };
  const source = createPsTableSource({
    read: async () => {
      reads.count++;
      await gate;
      return runPs();
    },
  });
  const restore = useProcessBackend({
    ...psBackend(source),
    tableOfNow: () => {
      throw new Error("a synchronous ps read would block the host's event loop");
    },
  });
  return { open, reads, restore };
}

const spawned: SupervisedChild[] = [];
let restoreBackend = () => {};
afterEach(() => {
  restoreBackend();
  for (const child of spawned.splice(0)) {
    if (child.child.exitCode === null && child.child.signalCode === null) {
      child.child.kill("SIGKILL");
    }
  }
});

describe("child kit", () => {
  it("identifies a child under ps off the event loop, registers it, retires it in one order", async () => {
    const ps = gatedPsBackend();
    restoreBackend = ps.restore;
    const registry = createProcessRegistry();
    const child = spawnChild(ctx, {
      args: ["worker"],
      command: waiting(true),
      runEnvironment: baseRunEnvironment(process.env),
      logStem: "kit:one",
      onOutputExceeded() {},
      register: { registry, kind: "resolver", runId: null },
    });
    spawned.push(child);
    // The spawn returned with the ps read still pending, and the loop keeps turning meanwhile.
    expect(child.identity).toBeNull();
    await new Promise((resolve) => setImmediate(resolve));
    expect(ps.reads.count).toBe(1);
    expect(registry.size()).toBe(0);
    ps.open();
    const identity = await child.identified;
    expect(identity).not.toBeNull();
    expect(identity!.pid).toBe(child.child.pid);
    const row = (await psBackend().table({ fresh: true })).stat(identity!.pid);
    expect(identity!.startTime).toBe(row?.startTime);
    expect(child.identity).toEqual(identity);
    expect(registry.has(identity!)).toBe(true);
    expect(child.logFiles.stdout).toBe(join(stateDir, "workers", "kit_one.out"));

    // Its channel is read through the kit's one reader.
    expect(await readerOf(child).next()).toMatchObject({ ok: true, value: { up: true } });

    // It ignores SIGTERM: the bounded wait ends in SIGKILL of its group.
    const forgotten: unknown[] = [];
    await retireChild(child, 200, (id) => forgotten.push(id));
    expect(await child.exited).toEqual({ code: null, signal: "SIGKILL" });
    expect(forgotten).toEqual([identity]);
    expect(registry.size()).toBe(0);
    expect(existsSync(child.logFiles.stdout)).toBe(false);
    expect(existsSync(child.logFiles.stderr)).toBe(false);
  });

  it("stops a child asked to stop before its identity was read, once it is", async () => {
    const ps = gatedPsBackend();
    restoreBackend = ps.restore;
    const child = spawnChild(ctx, {
      args: ["worker"],
      command: waiting(false),
      runEnvironment: baseRunEnvironment(process.env),
      logStem: "kit-two",
      onOutputExceeded() {},
    });
    spawned.push(child);
    const stopped = stopChildGroup(child, { graceMs: 5_000 });
    ps.open();
    expect(await stopped).toBe("terminated");
    expect(await child.exited).toEqual({ code: null, signal: "SIGTERM" });
    await retireChild(child, 0);
  });

  it("keeps a child whose stop did not finish registered and named in host_children", async () => {
    const store = openStateStore({
      stateDir: join(stateDir, "stuck"),
      clock: new FakeClock(),
      ids: sequentialIds(),
    });
    const registry = createProcessRegistry({
      store,
      onWriteFailed: (error) => {
        throw error;
      },
    });
    const child = spawnChild(ctx, {
      args: ["worker"],
      command: waiting(false),
      runEnvironment: baseRunEnvironment(process.env),
      logStem: "kit-stuck",
      onOutputExceeded() {},
      register: { registry, kind: "validator", runId: "run-1" },
    });
    spawned.push(child);
    const identity = (await child.identified)!;
    const row = {
      pid: identity.pid,
      startTime: identity.startTime,
      kind: "validator",
      runId: "run-1",
    };
    expect(listHostChildren(store)).toEqual([row]);
    // Up (its one write done): cutting the channel does not end it.
    expect(await readerOf(child).next()).toMatchObject({ ok: true, value: { up: true } });
    // No process table from here (a failing `ps`): the group cannot be signalled, nor seen gone.
    const real = processBackend();
    restoreBackend = useProcessBackend({
      ...real,
      table: () => Promise.reject(new ProcessTableUnavailable("no table")),
    });
    let kept: boolean | null = null;
    // `forget` runs once the stop gave up; the child is then ended from here.
    await retireChild(child, 0, () => {
      kept = registry.has(identity);
      child.child.kill("SIGKILL");
    });
    expect(kept).toBe(true);
    expect(listHostChildren(store)).toEqual([row]);
    closeStateStore(store);
  });
});

describe("the log budget", () => {
  it("never prunes the output of a live child, whatever its kind (a fresh validation child)", async () => {
    const budget = { stateDir: join(stateDir, "budget"), options: DEFAULT_SUPERVISION_OPTIONS };
    const child = spawnChild(budget, {
      args: ["worker", "--validate"],
      command: waiting(false),
      runEnvironment: baseRunEnvironment(process.env),
      logStem: "vep-live",
      onOutputExceeded() {},
      register: { registry: createProcessRegistry(), kind: "validator", runId: "run-1" },
    });
    spawned.push(child);
    const { stdout, stderr } = child.logFiles;
    expect(await waitUntil(() => existsSync(stdout) && existsSync(stderr), 5_000)).toBe(true);
    // Older than the 201 files written after it: past the count kept (200), it would go first.
    const old = new Date(Date.now() - 60_000);
    for (const path of [stdout, stderr]) utimesSync(path, old, old);
    const logDir = join(budget.stateDir, "workers");
    for (let i = 0; i < 201; i++) writeFileSync(join(logDir, `ended-${i}.out`), "x");
    pruneLogs(budget);
    expect([existsSync(stdout), existsSync(stderr)]).toEqual([true, true]);
    expect(readdirSync(logDir)).toHaveLength(202);
    await retireChild(child, 0);
  });

  it("never prunes what a live run worker writes itself: its Pi's tails, its open step's output", () => {
    const budget = { stateDir: join(stateDir, "budget-run"), options: DEFAULT_SUPERVISION_OPTIONS };
    const logDir = join(budget.stateDir, "workers");
    mkdirSync(logDir, { recursive: true });
    const old = new Date(Date.now() - 60_000);
    const files = ["wep_1-pi1.out", "step-att-1.1.out", "wep_2-pi1.out", "step-att-2.1.err"];
    for (const name of files) {
      writeFileSync(join(logDir, name), "x");
      utimesSync(join(logDir, name), old, old);
    }
    for (let i = 0; i < 200; i++) writeFileSync(join(logDir, `ended-${i}.out`), "x");
    pruneLogs(budget, [{ workerEpoch: "wep:1", openAttempt: { attemptId: "att-1" } }]);
    // The live worker's two are kept; the ended epoch's and attempt's are past the count.
    expect(files.map((name) => existsSync(join(logDir, name)))).toEqual([true, true, false, false]);
  });
});

describe("child requests", () => {
  /** A channel the test writes the child's frames into; the host's writes go nowhere. */
  function fakeChild() {
    const channel = new PassThrough();
    const child = { channel, exited: new Promise(() => {}) } as unknown as SupervisedChild;
    const say = (value: unknown) => channel.write(`${JSON.stringify(value)}\n`);
    return { child, channel, say };
  }
  const codec = (value: unknown): Heard<string, number> => {
    const frame = value as { id?: string; answer?: string; step?: number };
    if (frame.step !== undefined) return { progress: frame.step };
    if (frame.answer === undefined) return null;
    return { answer: frame.answer, ...(frame.id ? { requestId: frame.id } : {}) };
  };

  it("answers by id, gives progress to the oldest request, and ends the open ones", async () => {
    const { child, say } = fakeChild();
    let ended = 0;
    const requests = serveChildRequests(child, codec, () => ended++);
    const steps: number[] = [];
    const first = requests.expect("a", 60_000, (step) => steps.push(step));
    const second = requests.expect("b", 60_000);
    const third = requests.expect("c", 60_000);
    say({ step: 1 });
    say({ id: "b", answer: "B" });
    say({ answer: "A" }); // no id: the oldest open request's
    expect(await second).toEqual({ ok: true, answer: "B" });
    expect(await first).toEqual({ ok: true, answer: "A" });
    expect(steps).toEqual([1]);
    expect(requests.open()).toBe(1);
    say({ broken: true }); // the codec refuses it: the reading ends
    expect(await third).toEqual({ ok: false, why: "ended" });
    await requests.ended;
    expect(ended).toBe(1);
  });

  it("cuts the channel of a request not answered in time", async () => {
    const { child, channel } = fakeChild();
    const requests = serveChildRequests(child, codec);
    expect(await requests.expect("a", 10)).toEqual({ ok: false, why: "timedOut" });
    expect(channel.destroyed).toBe(true);
    await requests.ended;
  });
});

/**
 * The checkpoint runner (src/state/checkpoint-runner.ts): a checkpoint of a large WAL runs on its
 * own thread while the event loop keeps turning; a thread killed mid-checkpoint, one that hangs and
 * one that cannot start are each logged and that checkpoint runs on the calling thread, so every
 * caller still gets a complete, synced checkpoint; a retention pass with a runner waits for its
 * checkpoints and hands files over only after them.
 */
import fs, { mkdirSync, realpathSync, rmSync, statSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import workerThreads from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import {
  checkpointHere,
  type CheckpointRunner,
  createCheckpointRunner,
  MAX_THREAD_FAILURES,
} from "../../src/state/checkpoint-runner.ts";
import { CHECKPOINT_THREAD_SOURCE, checkpointAndSync } from "../../src/state/checkpoint-thread.ts";
import { readWalPosition } from "../../src/state/retention/wal-frames.ts";
import { FakeClock, sequentialIds } from "../../src/base/clock.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { createRetentionPass, DAY_MS } from "../../src/state/retention/retention-pass.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { type Fixture, HOST_EPOCH, openFixture, tempDir } from "../support/state-store.ts";
import { endedRun } from "../support/ended-runs.ts";

let fx: Fixture | undefined;
let runner: CheckpointRunner | undefined;
afterEach(async () => {
  await runner?.close();
  runner = undefined;
  fx?.close();
  fx = undefined;
});

/** `pages` distinct 4 KiB pages written to the WAL and left there (automatic checkpoints off). */
function fillWal(f: Fixture, pages: number): void {
  f.store.db.exec("PRAGMA wal_autocheckpoint = 0");
  f.store.db.exec("CREATE TABLE IF NOT EXISTS ballast (b BLOB)");
  const insert = f.store.db.prepare("INSERT INTO ballast VALUES (randomblob(4000))");
  f.store.db.exec("BEGIN");
  for (let i = 0; i < pages; i++) insert.run();
  f.store.db.exec("COMMIT");
}

const walFrames = (f: Fixture) => Math.floor(statSync(`${f.store.path}-wal`).size / 4120);

describe("checkpoint runner", () => {
  it("copies the commits made while it copied, so the next write starts the WAL over", () => {
    const f = fx = openFixture();
    fillWal(f, 200);
    const other = new DatabaseSync(f.store.path);
    try {
      // The checkpoint's first copy runs for real; another connection's commit lands right after
      // it, as the host's own write lands while the thread copies a retention pass's frames.
      let copies = 0;
      const db = {
        prepare: (sql: string) => ({
          get: () => {
            const row = f.store.db.prepare(sql).get();
            if (copies++ === 0) other.exec("INSERT INTO ballast VALUES (randomblob(4000))");
            return row;
          },
        }),
      } as unknown as DatabaseSync;
      checkpointAndSync(db, `${f.store.path}-wal`);
      const before = readWalPosition(f.store.path)!;
      f.store.db.exec("INSERT INTO ballast VALUES (randomblob(10))");
      const after = readWalPosition(f.store.path)!;
      // A new salt: the WAL started over (every frame was in the database file).
      expect(after.salt).not.toBe(before.salt);
      expect(after.frames).toBeLessThan(10);
    } finally {
      other.close();
    }
  });

  it("checkpoints a large WAL on its own thread while the event loop keeps turning", async () => {
    fx = openFixture();
    fillWal(fx, 4_000);
    expect(walFrames(fx)).toBeGreaterThan(4_000);
    const problems: string[] = [];
    runner = createCheckpointRunner(fx.store, { onProblem: (m) => problems.push(m) });
    expect(runner.offThread).toBe(true);
    // Event-loop turns while the checkpoint runs: on the calling thread there would be none, and
    // the gap around it would be the whole checkpoint.
    const turns: number[] = [];
    let running = true;
    const turn = () => {
      turns.push(performance.now());
      if (running) setImmediate(turn);
    };
    const started = performance.now();
    setImmediate(turn);
    const result = await runner.checkpoint();
    running = false;
    const ended = performance.now();
    expect(problems).toEqual([]);
    expect(result.on).toBe("thread");
    expect(result.busy).toBe(0);
    expect(result.checkpointed).toBe(result.log);
    expect(result.log).toBeGreaterThan(4_000);
    const points = [started, ...turns, ended];
    const gaps = points.slice(1).map((t, i) => t - points[i]!);
    expect(turns.length).toBeGreaterThan(2);
    // The longest stretch without a turn is well below the checkpoint's own length.
    expect(Math.max(...gaps)).toBeLessThan(result.ms);
    // It is in the database file: a new connection with the WAL gone would see the rows.
    const n = fx.store.db.prepare("SELECT COUNT(*) AS n FROM ballast").get() as { n: number };
    expect(n.n).toBe(4_000);
  });

  it("a thread killed mid-checkpoint is logged and the checkpoint runs here; the next gets a new thread", async () => {
    fx = openFixture();
    fillWal(fx, 200);
    const problems: string[] = [];
    const threads: InstanceType<typeof workerThreads.Worker>[] = [];
    runner = createCheckpointRunner(fx.store, {
      onProblem: (m) => problems.push(m),
      onThread: (t) => threads.push(t),
    });
    const pending = runner.checkpoint();
    void threads[0]!.terminate();
    const result = await pending;
    expect(result.on).toBe("host");
    expect(result.checkpointed).toBe(result.log);
    expect(problems).toEqual([
      expect.stringMatching(
        /^The checkpoint thread failed \(it exited with code \d+\); checkpointing on the host's thread$/,
      ),
    ]);
    fillWal(fx, 10);
    const next = await runner.checkpoint();
    expect(next.on).toBe("thread");
    expect(threads.length).toBe(2);
    expect(runner.offThread).toBe(true);
  });

  it("a thread that hangs is stopped at the deadline; one that cannot start is logged; after a few the runner stays here", async () => {
    fx = openFixture();
    fillWal(fx, 50);
    const problems: string[] = [];
    // Takes requests and never answers: the deadline stops it.
    const hangs =
      'globalThis.process.getBuiltinModule("node:worker_threads").parentPort.on("message", () => {});';
    runner = createCheckpointRunner(fx.store, {
      deadlineMs: 300,
      onProblem: (m) => problems.push(m),
      threadSource: hangs,
    });
    const first = await runner.checkpoint();
    expect(first.on).toBe("host");
    expect(first.checkpointed).toBe(first.log);
    expect(problems).toEqual([
      "The checkpoint thread failed (no answer within 300 ms); checkpointing on the host's thread",
    ]);
    await runner.close();
    // A thread that throws as it starts fails by its error, not by the deadline: the default
    // one, since a thread's start alone took over 300 ms on a loaded machine (the deadline then
    // fired first and the failure read "no answer").
    problems.length = 0;
    let started = 0;
    runner = createCheckpointRunner(fx.store, {
      onProblem: (m) => problems.push(m),
      get threadSource() {
        started++;
        return 'throw new Error("cannot open the database");';
      },
    });
    for (let i = 0; i < MAX_THREAD_FAILURES; i++) {
      expect((await runner.checkpoint()).on).toBe("host");
    }
    expect(problems).toEqual([
      ...Array(MAX_THREAD_FAILURES).fill(
        "The checkpoint thread failed (cannot open the database); checkpointing on the host's thread",
      ),
      `The checkpoint thread failed ${MAX_THREAD_FAILURES} times in a row; checkpoints stay on the host's thread`,
    ]);
    expect(runner.offThread).toBe(false);
    const count = started;
    expect((await runner.checkpoint()).on).toBe("host");
    expect(started).toBe(count);
  });

  it("a retention pass waits for its checkpoints on the thread and hands files over after them", async () => {
    fx = openFixture();
    for (let i = 0; i < 8; i++) endedRun(fx.store, { hostEpoch: HOST_EPOCH, attempts: 3 });
    fx.clock.advance(40 * DAY_MS);
    const problems: string[] = [];
    runner = createCheckpointRunner(fx.store, { onProblem: (m) => problems.push(m) });
    const checkpoints: number[] = [];
    const pass = createRetentionPass(fx.store, {
      keepDays: 30,
      checkpointFrames: 40,
      checkpointRunner: runner,
      onCheckpoint: (_ms, _frames, threadMs) => checkpoints.push(threadMs),
    });
    let waits = 0;
    const handedOver: string[] = [];
    while (pass.step()) {
      const waiting = pass.waiting();
      if (!waiting) continue;
      waits++;
      // Nothing is handed over while a checkpoint runs, and a step meanwhile does nothing.
      expect(pass.takePruned().runs).toEqual([]);
      const transactions = pass.report.transactions;
      expect(pass.step()).toBe(true);
      expect(pass.report.transactions).toBe(transactions);
      await waiting;
      handedOver.push(...pass.takePruned().runs);
    }
    handedOver.push(...pass.takePruned().runs);
    expect(problems).toEqual([]);
    expect(pass.report.runs).toBe(8);
    expect(new Set(handedOver).size).toBe(8);
    // Opening, the ones between transactions and the closing one, each waited for.
    expect(waits).toBeGreaterThan(3);
    expect(checkpoints.length).toBe(waits);
    expect(pass.report.fileBytesBefore).toBeGreaterThan(pass.report.fileBytesAfter);
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("syncs the WAL beside a symlinked state file's target, where SQLite writes it", async () => {
    const root = tempDir();
    const real = join(root, "elsewhere");
    const stateDir = join(root, "state");
    const open = (dir: string) =>
      openStateStore({ stateDir: dir, clock: new FakeClock(), ids: sequentialIds() });
    closeStateStore(open(real));
    mkdirSync(stateDir, { mode: 0o700 });
    symlinkSync(join(real, "state.sqlite"), join(stateDir, "state.sqlite"));
    const store = open(stateDir);
    const reader = new DatabaseSync(join(stateDir, "state.sqlite"));
    const wal = `${realpathSync(join(real, "state.sqlite"))}-wal`;
    try {
      const f = { store } as Fixture;
      fillWal(f, 20);
      // A reader's snapshot holds the later frames back: no checkpoint copies them all, so each
      // one syncs the WAL.
      reader.exec("BEGIN");
      reader.prepare("SELECT COUNT(*) FROM ballast").get();
      fillWal(f, 20);
      // Here: the paths the checkpoint opens, seen through the fs module it takes them from.
      const opened: string[] = [];
      const openSync = fs.openSync;
      fs.openSync = ((path: string, ...rest: [never]) => {
        opened.push(String(path));
        return openSync(path, ...rest);
      }) as typeof fs.openSync;
      let here;
      try {
        here = checkpointHere(store);
      } finally {
        fs.openSync = openSync;
      }
      expect(here.checkpointed).toBeLessThan(here.log);
      expect(opened).toEqual([wal]);
      // On the thread: the same checkpoint's source, its opens told to the test as it runs.
      const onThread: string[] = [];
      runner = createCheckpointRunner(store, {
        onProblem: (m) => onThread.push(`problem: ${m}`),
        threadSource: `{
          const fs = process.getBuiltinModule("node:fs");
          const { parentPort } = process.getBuiltinModule("node:worker_threads");
          const openSync = fs.openSync;
          fs.openSync = (path, ...rest) => {
            parentPort.postMessage({ id: 0, opened: String(path) });
            return openSync(path, ...rest);
          };
        }
        ${CHECKPOINT_THREAD_SOURCE}`,
        onThread: (thread) =>
          thread.on("message", (m: { opened?: string }) => m.opened && onThread.push(m.opened)),
      });
      fillWal(f, 20);
      const there = await runner.checkpoint();
      expect(there.on).toBe("thread");
      expect(there.checkpointed).toBeLessThan(there.log);
      expect(onThread).toEqual([wal]);
    } finally {
      reader.close();
      await runner?.close();
      runner = undefined;
      closeStateStore(store);
      rmSync(root, { recursive: true, force: true });
    }
  });
});

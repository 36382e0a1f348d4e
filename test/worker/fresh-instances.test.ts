/**
 * A prepared process's fresh workflow instances (src/worker/fresh-instances.ts): two spares
 * loaded ahead one at a time, each after a turn of the event loop, taken oldest first, a load at
 * once when none is ready, no load beyond what was missing when the fill began, and bounds on
 * the loads and on memory growth after which the process asks not to be kept.
 */
import { describe, expect, it } from "vitest";
import {
  createFreshInstances,
  MAX_KEPT_GROWTH_BYTES,
  SPARES,
} from "../../src/worker/fresh-instances.ts";

/** A loader whose loads finish when the test says so, numbered from 1. */
function controlledLoader() {
  const pending: Array<() => void> = [];
  let started = 0;
  return {
    load: () => {
      const n = ++started;
      return new Promise<number>((resolve) => pending.push(() => resolve(n)));
    },
    started: () => started,
    finishNext: async () => {
      pending.shift()!();
      // Let the pool's fill loop start its next load (after its turn of the event loop).
      for (let i = 0; i < 5; i++) await Promise.resolve();
      await turn();
    },
  };
}

/** One turn of the event loop (the fill loop waits one before each load). */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("fresh workflow instances", () => {
  it("keeps two spares, loaded one after another, and hands each out once", async () => {
    const loader = controlledLoader();
    const pool = createFreshInstances(loader.load);
    pool.fill();
    pool.fill(); // a second fill while loading starts nothing more
    expect(loader.started()).toBe(0);
    await turn();
    expect(loader.started()).toBe(1);
    await loader.finishNext();
    expect(loader.started()).toBe(SPARES);
    await loader.finishNext();
    expect(await pool.take()).toBe(1);
    expect(await pool.take()).toBe(2);
    // None ready: loaded at once.
    const third = pool.take();
    expect(loader.started()).toBe(3);
    await loader.finishNext();
    expect(await third).toBe(3);
    const now = pool.loadNow();
    await loader.finishNext();
    expect(await now).toBe(4);
  });

  it("a take while filling counts as a load: none lands on that exchange's path", async () => {
    const loader = controlledLoader();
    const pool = createFreshInstances(loader.load);
    pool.fill();
    // A validation request read before the first spare's load began: it loads its own.
    const own = pool.take();
    await turn();
    expect(loader.started()).toBe(2);
    await loader.finishNext();
    await loader.finishNext();
    expect(await own).toBe(1);
    // The epoch's spare is the fill's one load; no third one starts.
    expect(loader.started()).toBe(2);
    expect(await pool.take()).toBe(2);
  });

  it("stops loading at its bound and then says the process is spent", async () => {
    const loader = controlledLoader();
    const pool = createFreshInstances(loader.load, 3);
    pool.fill();
    await turn();
    await loader.finishNext();
    await loader.finishNext();
    expect(pool.spent()).toBe(false);
    await pool.take();
    pool.fill();
    await turn();
    await loader.finishNext();
    expect(loader.started()).toBe(3);
    expect(pool.spent()).toBe(true);
    await pool.take();
    await pool.take();
    pool.fill();
    expect(loader.started()).toBe(3);
  });

  it("says the process is spent once its memory grew by the bound, whatever its loads", () => {
    const loader = controlledLoader();
    let resident = 100 * 1024 * 1024;
    const pool = createFreshInstances(loader.load, 256, () => resident);
    resident += MAX_KEPT_GROWTH_BYTES - 1;
    expect(pool.spent()).toBe(false);
    resident += 1;
    expect(pool.spent()).toBe(true);
  });

  it("a failed load is seen by its take, not as an unhandled rejection", async () => {
    const pool = createFreshInstances(() => Promise.reject(new Error("bad source")));
    pool.fill();
    await expect(pool.take()).rejects.toThrow("bad source");
  });
});

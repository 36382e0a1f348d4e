/**
 * The prune's tempo (src/state/retention/prune-tempo.ts): how many runs a transaction takes from
 * the times its transactions took, on a clock of the test's own (a batch's deletion costs a fixed
 * part and a part per run).
 */
import { describe, expect, it } from "vitest";
import { createPruneTempo } from "../../src/state/retention/prune-tempo.ts";

/** A machine: a run's check and mark, and a batch's deletion as `fixedMs + perRunMs * runs`. */
interface Machine {
  markMs: number;
  fixedMs: number;
  perRunMs: number;
}

/**
 * Transactions as the prune phase runs them (a 4 ms budget, its first half for the work): runs
 * marked while the tempo says one more fits (the first always goes), then their batch deleted.
 * `slow` gives a transaction's deletion time instead of the machine's (a preempted batch). The
 * runs each took.
 */
function transactions(
  machine: Machine,
  n: number,
  slow: Map<number, number> = new Map(),
  cut: Map<number, number> = new Map(),
) {
  const tempo = createPruneTempo({
    budgetMs: 4,
    transactionRuns: 64,
    transactionFrames: 512,
    checkpoints: { lastCycle: () => null, lastTransactionFrames: () => null },
  });
  const taken: number[] = [];
  for (let k = 0; k < n; k++) {
    const max = tempo.maxRuns();
    let elapsed = 0;
    let marked = 0;
    while (marked < max && (marked === 0 || tempo.fits(elapsed, marked))) {
      elapsed += machine.markMs;
      tempo.marked(machine.markMs);
      marked++;
    }
    const ms = cut.get(k) ?? slow.get(k) ?? machine.fixedMs + machine.perRunMs * marked;
    elapsed += ms;
    tempo.deleted(marked, ms, elapsed, cut.has(k));
    taken.push(marked);
  }
  return taken;
}

/** The most runs whose marks and deletion fit the 2 ms half budget on `machine` (at least 1). */
function most(machine: Machine): number {
  let runs = 1;
  while (
    (runs + 1) * machine.markMs + machine.fixedMs + (runs + 1) * machine.perRunMs <= 2
  ) runs++;
  return runs;
}

/**
 * `runs` runs a transaction, and now and then a probe of one more (a batch of the next size tells
 * the fit the two parts apart again): never fewer.
 */
function expectMost(taken: number[], runs: number): void {
  expect(Math.min(...taken)).toBe(runs);
  expect(Math.max(...taken)).toBeLessThanOrEqual(runs + 1);
  expect(taken.filter((n) => n === runs).length).toBeGreaterThanOrEqual(taken.length * 0.75);
}

describe("the prune's tempo", () => {
  it("a batch cut short after one statement (its marks ran past the deadline) sizes nothing", () => {
    const machine = { markMs: 0.1, fixedMs: 1.4, perRunMs: 0.15 };
    // Batch 10 is cut at 0.1 ms: its deletion began at the deadline. Restarting the fit from it
    // made deletion look nearly free and the next batches took the frame budget's runs (7).
    const taken = transactions(machine, 30, new Map(), new Map([[10, 0.1]]));
    expect(Math.max(...taken.slice(10))).toBeLessThanOrEqual(most(machine) + 1);
  });

  it("probes one more run only while the transaction has the time for its mark", () => {
    const tempo = createPruneTempo({
      budgetMs: 4,
      transactionRuns: 64,
      transactionFrames: 512,
      checkpoints: { lastCycle: () => null, lastTransactionFrames: () => null },
    });
    tempo.marked(0.1);
    tempo.deleted(1, 0.5, 0.6); // one run, and time left for another
    expect(tempo.fits(0.6, 1)).toBe(true);
    // The same after its marks took 1.95 ms (preempted): no time for one more.
    expect(tempo.fits(1.95, 1)).toBe(false);
  });

  it("takes again the runs that fit after a slow batch, though most of a batch's time is fixed", () => {
    // Two runs fit (1.9 ms), three do not (2.15): most of a batch's time is its fixed part.
    const machine = { markMs: 0.1, fixedMs: 1.4, perRunMs: 0.15 };
    expect(most(machine)).toBe(2);
    // One batch is slow (20 ms: preempted), then the machine is as before. Averaged per run with
    // the fixed part in, one run looked like 1.55 ms after it and two never fitted again.
    const taken = transactions(machine, 60, new Map([[10, 20]]));
    expectMost(taken.slice(-20), 2);
  });

  it("takes the runs that fit when a run's own part is most of a batch's time", () => {
    const machine = { markMs: 0.1, fixedMs: 0.2, perRunMs: 0.55 };
    expect(most(machine)).toBe(2);
    const taken = transactions(machine, 60, new Map([[10, 20]]));
    expectMost(taken.slice(-20), 2);
  });

  it("takes one run a transaction where one run takes the half budget, and several on a fast machine", () => {
    expect(transactions({ markMs: 0.3, fixedMs: 2.5, perRunMs: 0.5 }, 30).slice(1))
      .toEqual(Array(29).fill(1));
    const fast = { markMs: 0.05, fixedMs: 0.3, perRunMs: 0.1 };
    expect(most(fast)).toBe(11);
    // The frame budget's first guess (512 / 70 frames a run) bounds it: 7.
    expect(transactions(fast, 30).slice(-10)).toEqual(Array(10).fill(7));
  });
});

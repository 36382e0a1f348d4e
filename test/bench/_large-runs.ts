/**
 * The retention benchmark's large runs: one ended run with `attempts` extra attempts and one with
 * `events` extra events (progress updates of one attempt; smoke: 100 and 200), each built through
 * the real transitions, then pruned on copies of the same file two ways, in turns: in one transaction per
 * run (the budget and the row bound lifted: how a run went before batches) and as the pass does
 * it (a mark, then batches within the step budget). Between two transactions the host writes one
 * update of an active run (the baseline, as in the main case). Reports per shape and way the
 * prune's longest lock hold, its transactions, and the host writes' longest.
 */
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { FakeClock, sequentialIds } from "../../src/base/clock.ts";
import { DAY_MS, runRetentionPass } from "../../src/state/retention/retention-pass.ts";
import { createRetentionPass } from "../../src/state/retention/retention-pass.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { acquireHostClaim } from "../../src/state/host-claim.ts";
import { recordNodeUpdate } from "../../src/state/transitions/node-attempts.ts";
import { activeRun, endedRun } from "../support/ended-runs.ts";
import { round } from "./_figures.ts";

interface Shape {
  name: string;
  attempts: number;
  updates: number;
}

export interface LargeRunFigures {
  /** The run's rows the prune deleted. */
  rows: number;
  longestLockMs: number;
  /**
   * The most CPU time (user + system) of one step with a prune transaction: on a loaded machine
   * the wall time of a transaction is mostly waiting for a CPU, this is its own work.
   */
  longestCpuMs: number;
  transactions: number;
  hostWriteMaxMs: number;
}

const WAYS = ["oneTransaction", "batched"] as const;

/** Builds each shape once, prunes copies both ways `rounds` times in turns. */
export function largeRuns(
  root: string,
  sizes: { attempts: number; events: number },
  rounds: number,
): Record<string, Record<(typeof WAYS)[number], LargeRunFigures[]>> {
  const shapes: Shape[] = [
    { name: `attempts${sizes.attempts}`, attempts: sizes.attempts, updates: 1 },
    { name: `events${sizes.events}`, attempts: 2, updates: sizes.events },
  ];
  const out: Record<string, Record<(typeof WAYS)[number], LargeRunFigures[]>> = {};
  for (const shape of shapes) {
    const built = build(join(root, `large-${shape.name}`), shape);
    const figures = { oneTransaction: [] as LargeRunFigures[], batched: [] as LargeRunFigures[] };
    for (let r = 0; r < rounds; r++) {
      for (const way of WAYS) {
        const dir = join(root, `large-${shape.name}-${way}-${r}`);
        mkdirSync(dir, { recursive: true });
        copyFileSync(join(built.dir, "state.sqlite"), join(dir, "state.sqlite"));
        figures[way].push(prune(dir, built, way));
      }
    }
    out[shape.name] = figures;
  }
  return out;
}

interface Built {
  dir: string;
  now: number;
  active: ReturnType<typeof activeRun>;
}

function build(dir: string, shape: Shape): Built {
  const clock = new FakeClock(Date.now() - 40 * DAY_MS);
  const store = openStateStore({ stateDir: dir, clock, ids: sequentialIds() });
  store.db.exec("PRAGMA synchronous = OFF");
  const host = acquireHostClaim(store, { ownerId: "bench", token: "seed", ttlMs: 2 ** 42 });
  endedRun(store, { hostEpoch: host.epoch, attempts: shape.attempts, updates: shape.updates });
  clock.set(Date.now());
  // Compacted as a running host would have (nothing is past a 100-year period).
  runRetentionPass(store, { keepDays: 36_500 });
  const active = activeRun(store, { hostEpoch: host.epoch });
  store.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  closeStateStore(store);
  return { dir, now: clock.now(), active };
}

function prune(dir: string, built: Built, way: (typeof WAYS)[number]): LargeRunFigures {
  const store = openStateStore({
    stateDir: dir,
    clock: new FakeClock(built.now),
    ids: sequentialIds(),
  });
  // The host's durability, as in the main case.
  store.db.exec("PRAGMA synchronous = FULL");
  try {
    let longest = 0;
    let longestCpu = 0;
    let transactions = 0;
    let pruned = false;
    const pass = createRetentionPass(store, {
      keepDays: 30,
      ...(way === "oneTransaction" ? { stepBudgetMs: Infinity, transactionRows: Infinity } : {}),
      onTransaction: (phase, ms) => {
        if (phase !== "prune") return;
        pruned = true;
        longest = Math.max(longest, ms);
        transactions++;
      },
    });
    let hostWriteMaxMs = 0;
    let n = 0;
    for (;;) {
      pruned = false;
      const cpu = process.cpuUsage();
      const more = pass.step();
      const used = process.cpuUsage(cpu);
      if (pruned) longestCpu = Math.max(longestCpu, (used.user + used.system) / 1000);
      if (!more) break;
      const started = performance.now();
      recordNodeUpdate(store, built.active.claim, {
        attemptId: built.active.attemptId,
        type: "progress",
        key: "p",
        data: { completed: ++n, total: 1e9 },
      });
      hostWriteMaxMs = Math.max(hostWriteMaxMs, performance.now() - started);
    }
    const rows = Object.values(pass.report.rows).reduce((a, b) => a + b, 0);
    return {
      rows,
      longestLockMs: round(longest),
      longestCpuMs: round(longestCpu),
      transactions,
      hostWriteMaxMs: round(hostWriteMaxMs),
    };
  } finally {
    closeStateStore(store);
  }
}

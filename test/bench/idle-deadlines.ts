/**
 * `npm run bench -- idle-deadlines [count] [windowMs]`: what many runs waiting at a human
 * decision (default 1,000, each with an `onTimeout` default pending) cost an idle host. A real
 * `host run` idles on an empty state directory and on the seeded one, interleaved; its CPU time
 * and voluntary wake-ups over the window come from /proc. Beside them, the measured cost of what
 * the host did before the deadline timer: every 500 ms, read and parse every pending decision's
 * request to find due defaults. One JSON line.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { queryAll } from "../../src/state/statements.ts";
import { idleUsage, type ProcessUsage, seedWaitingDecisions, startHost } from "./_waiting-host.ts";
import { benchArgs, bySize } from "./_figures.ts";

const count = Number(benchArgs[0] ?? bySize(1000, 20));
const windowMs = Number(benchArgs[1] ?? bySize(10_000, 500));
const ROUNDS = bySize(2, 1);

const root = mkdtempSync(join(tmpdir(), "pwb-idle-"));
try {
  const empty = join(root, "empty");
  const seeded = join(root, "seeded");
  openStateStore({ stateDir: empty, clock: systemClock, ids: randomIds }).db.close();
  const seedStart = performance.now();
  seedWaitingDecisions(seeded, count);
  const seedMs = performance.now() - seedStart;

  const samples: { none: ProcessUsage[]; waiting: ProcessUsage[] } = { none: [], waiting: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [key, dir] of [["none", empty], ["waiting", seeded]] as const) {
      const host = await startHost(dir, root);
      try {
        samples[key].push(await idleUsage(host.child.pid!, windowMs));
      } finally {
        await host.stop();
      }
    }
  }

  // The earlier approach, measured on the same seeded file: one poll = read every pending
  // decision's request JSON and parse it; it ran twice a second.
  const store = openStateStore({ stateDir: seeded, clock: systemClock, ids: randomIds });
  const polls = 20;
  const pollStart = performance.now();
  for (let i = 0; i < polls; i++) {
    for (
      const row of queryAll<{ request_json: string }>(
        store,
        "SELECT request_json FROM human_decisions WHERE state = 'pending' AND kind = 'humanDecision'",
      )
    ) JSON.parse(row.request_json);
  }
  const pollMs = (performance.now() - pollStart) / polls;
  closeStateStore(store);

  const perSecond = (list: ProcessUsage[], field: keyof ProcessUsage) =>
    list.map((u) => round2((u[field] * 1000) / windowMs));
  const median = (list: number[]) => {
    const sorted = [...list].sort((a, b) => a - b);
    const mid = sorted.length / 2;
    return sorted.length % 2 ? sorted[Math.floor(mid)] : (sorted[mid - 1] + sorted[mid]) / 2;
  };
  const none = perSecond(samples.none, "cpuMs");
  const waiting = perSecond(samples.waiting, "cpuMs");
  console.log(JSON.stringify({
    bench: "idle-deadlines",
    waiting_runs: count,
    window_ms: windowMs,
    rounds: ROUNDS,
    seed_ms: Math.round(seedMs),
    cpu_ms_per_window: {
      none: samples.none.map((u) => u.cpuMs),
      waiting: samples.waiting.map((u) => u.cpuMs),
    },
    cpu_ms_per_s: { none, waiting },
    wakeups_per_s: {
      none: perSecond(samples.none, "wakeups"),
      waiting: perSecond(samples.waiting, "wakeups"),
    },
    cpu_ms_per_s_added_by_waiting: round2(median(waiting) - median(none)),
    previous_poll_ms_each: round2(pollMs),
    previous_poll_cpu_ms_per_s: round2(pollMs * 2),
  }));
} finally {
  rmSync(root, { recursive: true, force: true });
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

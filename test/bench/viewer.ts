/**
 * `npm run bench -- viewer [--db DIR] [--ticks N] [--interval MS] [--repeat N]`: the viewer's
 * refresh loop on a synthetic state database of about 97 MB (generated in a temp dir unless
 * `--db` names one made by `viewer-db`), while a writer process keeps one run busy. Each repeat
 * runs in a fresh process (so peak RSS is the viewer's own): a first bounded window, then
 * ticks at the live view's cadence, half on the runs list and half on the busy run's detail;
 * a tick is one refresh plus a redraw when something changed (or every 50th tick, as the timer
 * redraw does). Prints one JSON line: per-repeat figures, and the median and range over
 * repeats of p99 tick time and peak RSS, against the gates (p99 < 16 ms, RSS < 185 MB). Wall
 * time on a shared machine includes time the process waited for a core, so each tick's CPU time
 * and the load average are printed too.
 */
import { type ChildProcess, fork, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { compose, frameLines } from "../../src/viewer/compose.ts";
import { initialUi } from "../../src/viewer/ui-state.ts";
import { createViewerData, refreshViewerData, watchRun } from "../../src/viewer/viewer-data.ts";
import { bySize, smoke } from "./_figures.ts";

const { values } = parseArgs({
  options: {
    db: { type: "string" },
    ticks: { type: "string", default: bySize("1000", "40") },
    interval: { type: "string", default: "20" },
    repeat: { type: "string", default: bySize("3", "1") },
    single: { type: "boolean", default: false },
    smoke: { type: "boolean", default: false },
  },
});
const here = new URL(".", import.meta.url).pathname;
/** `viewer-db` sizes under `--smoke`: projects runs attemptsPerRun updatesPerRun largeOutputBytes. */
const SMOKE_DB = ["3", "60", "4", "4", "2000"];
const ticks = Number(values.ticks);
const interval = Number(values.interval);

interface Single {
  runs: number;
  dbMegabytes: number;
  firstWindow: { ms: number; statements: number; rows: number; payloadRows: number };
  ticks: number;
  changedTicks: number;
  idle: { statementsPerTick: number; rowsPerTick: number; payloadRows: number };
  changed: { statementsMax: number; rowsP50: number; rowsMax: number; payloadRows: number };
  openDetail: { ms: number; statements: number; rows: number; payloadRows: number };
  tickMs: { p50: number; p99: number; max: number };
  /** CPU time of the tick (user + system): what the viewer costs, whatever else the machine runs. */
  tickCpuMs: { p50: number; p99: number; max: number };
  loadAverage: number;
  peakRssMb: number;
}

if (values.single) {
  console.log(JSON.stringify(await single(values.db!)));
} else {
  const dir = values.db ?? generate();
  try {
    const runs: Single[] = [];
    for (let i = 0; i < Number(values.repeat); i++) {
      const r = spawnSync(process.execPath, [
        join(here, "viewer.ts"),
        "--single",
        "--db",
        dir,
        "--ticks",
        String(ticks),
        "--interval",
        String(interval),
      ], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
      if (r.status !== 0) throw new Error(`benchmark repeat ${i + 1} failed`);
      runs.push(JSON.parse(r.stdout.trim().split("\n").pop()!));
    }
    const p99 = runs.map((r) => r.tickMs.p99);
    const cpuP99 = runs.map((r) => r.tickCpuMs.p99);
    const rss = runs.map((r) => r.peakRssMb);
    console.log(JSON.stringify({
      bench: "viewer",
      runs: runs[0].runs,
      dbMegabytes: runs[0].dbMegabytes,
      repeats: runs.length,
      p99TickMs: { median: median(p99), min: Math.min(...p99), max: Math.max(...p99) },
      p99TickCpuMs: { median: median(cpuP99), min: Math.min(...cpuP99), max: Math.max(...cpuP99) },
      maxTickMs: {
        median: median(runs.map((r) => r.tickMs.max)),
        max: Math.max(...runs.map((r) => r.tickMs.max)),
      },
      peakRssMb: { median: median(rss), min: Math.min(...rss), max: Math.max(...rss) },
      gates: { p99Below16ms: Math.max(...p99) < 16, peakRssBelow185MB: Math.max(...rss) < 185 },
      aims: { p99Below8ms: Math.max(...p99) < 8, peakRssBelow100MB: Math.max(...rss) < 100 },
      each: runs,
    }));
  } finally {
    if (!values.db) rmSync(dir, { recursive: true, force: true });
  }
}

function generate(): string {
  const dir = mkdtempSync(join(tmpdir(), "piw-viewer-bench-"));
  const r = spawnSync(process.execPath, [
    join(here, "viewer-db.ts"),
    dir,
    ...(smoke ? SMOKE_DB : []),
  ], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  if (r.status !== 0) throw new Error("generating the benchmark database failed");
  return dir;
}

async function single(dir: string): Promise<Single> {
  const writer = fork(join(here, "_viewer-writer.ts"), [dir, "25"], { stdio: "ignore" });
  try {
    const liveRun = await new Promise<string>((resolve, reject) => {
      writer.once("message", (m) => resolve((m as { runId: string }).runId));
      writer.once("exit", () => reject(new Error("the writer exited")));
    });
    const store = openStateStore({
      stateDir: dir,
      clock: systemClock,
      ids: randomIds,
      readOnly: true,
    });
    const stats = { statements: 0, rows: 0, payloadRows: 0 };
    store.readStats = stats;
    const reset = () => Object.assign(stats, { statements: 0, rows: 0, payloadRows: 0 });
    const data = createViewerData(store, { all: true });
    let ui = initialUi({ all: true });
    const t0 = performance.now();
    refreshViewerData(data);
    frameLines(compose(data, ui, 120, 50, Date.now()), ui, 120, 50, true, false);
    const firstWindow = { ms: round(performance.now() - t0), ...stats };
    watchRun(data, liveRun);

    const times: number[] = [];
    const idle = { statements: 0, rows: 0, payloadRows: 0, n: 0 };
    const changedRows: number[] = [];
    let changedStatementsMax = 0;
    let changedPayload = 0;
    const cpu: number[] = [];
    let openDetail = { ms: 0, statements: 0, rows: 0, payloadRows: 0 };
    for (let i = 0; i < ticks; i++) {
      if (i === Math.floor(ticks / 2)) {
        // The user opens the busy run: its first detail window is read here, not in a tick.
        ui = { ...initialUi({ runId: liveRun }), single: false };
        reset();
        const t = performance.now();
        frameLines(compose(data, ui, 120, 50, Date.now()), ui, 120, 50, true, false);
        openDetail = { ms: round(performance.now() - t), ...stats };
      }
      reset();
      const cpuStart = process.cpuUsage();
      const start = performance.now();
      const changed = refreshViewerData(data);
      if (changed || i % 50 === 0) {
        frameLines(compose(data, ui, 120, 50, Date.now()), ui, 120, 50, true, false);
      }
      times.push(performance.now() - start);
      const used = process.cpuUsage(cpuStart);
      cpu.push((used.user + used.system) / 1000);
      if (changed) {
        changedRows.push(stats.rows);
        changedStatementsMax = Math.max(changedStatementsMax, stats.statements);
        changedPayload += stats.payloadRows;
      } else {
        idle.statements = Math.max(idle.statements, stats.statements);
        idle.rows = Math.max(idle.rows, stats.rows);
        idle.payloadRows += stats.payloadRows;
        idle.n++;
      }
      await new Promise((r) => setTimeout(r, interval));
    }
    closeStateStore(store);
    const sorted = [...times].sort((a, b) => a - b);
    const rowsSorted = [...changedRows].sort((a, b) => a - b);
    const cpuSorted = [...cpu].sort((a, b) => a - b);
    return {
      runs: data.runs.length,
      dbMegabytes: Math.round(statSync(join(dir, "state.sqlite")).size / 1e5) / 10,
      firstWindow,
      ticks,
      changedTicks: changedRows.length,
      idle: {
        statementsPerTick: idle.statements,
        rowsPerTick: idle.rows,
        payloadRows: idle.payloadRows,
      },
      changed: {
        statementsMax: changedStatementsMax,
        rowsP50: rowsSorted[Math.floor(rowsSorted.length / 2)] ?? 0,
        rowsMax: rowsSorted[rowsSorted.length - 1] ?? 0,
        payloadRows: changedPayload,
      },
      openDetail,
      tickCpuMs: {
        p50: round(pct(cpuSorted, 0.5)),
        p99: round(pct(cpuSorted, 0.99)),
        max: round(cpuSorted[cpuSorted.length - 1]),
      },
      loadAverage: Math.round(loadavg()[0] * 10) / 10,
      tickMs: {
        p50: round(pct(sorted, 0.5)),
        p99: round(pct(sorted, 0.99)),
        max: round(sorted[sorted.length - 1]),
      },
      peakRssMb: Math.round(process.resourceUsage().maxRSS / 102.4) / 10,
    };
  } finally {
    stopChild(writer);
  }
}

function stopChild(child: ChildProcess): void {
  if (child.exitCode === null && child.pid) process.kill(child.pid, "SIGKILL");
}

function pct(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

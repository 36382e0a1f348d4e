/**
 * `npm run bench -- retention [--runs N] [--budget-ms N] [--checkpoints thread|inline]
 * [--checkpoint-frames N] [--transaction-runs N] [--gap-sleep-ms N] [--trace-ms N] [--stall-probe-s N]
 * [--prune-only]
 * [--smoke]` (smoke: 200 runs): a state
 * database with N (default 100,000) ended runs of a realistic shape plus 50 active runs, against
 * one with only the 50 active runs. Thirty runs are built through the real transitions
 * (test/support/ended-runs.ts: attempts with outputs and updates, a managed effect, a
 * notification, a human decision, client and worker receipts, two worker epochs, a completion
 * turn), ended 40 days ago; then what a running host did to them since (a pass that compacts
 * them and trims the viewer feed, prunes nothing); the rest are SQL copies of the compacted
 * templates under new ids (_replicate-runs.ts), one run a second.
 *
 * Prints one JSON line: file sizes before and after a prune (keepDays 30), bytes per ended run
 * and per node attempt (compacted; and as the runs ended, from the templates), the prune's write transactions (the
 * longest, p50/p99, the longest COMMIT alone; runs per prune transaction; WAL frames written, in all
 * and per pruned run, as the pass's checkpoints found them) beside the host's own one-run writes served
 * between them (the baseline: same file, same moment), doctor's findings, and run.status,
 * run.list, viewer tick and host start-up times before and after, each taken in turns with the
 * small database's (ratios), with the load average.
 *
 * The reads are the state queries the host's handlers and the viewer run (in process, so the
 * times are the database's, not the socket's); host start-up is the open with the integrity
 * check plus the recovery reads a starting host makes before it serves.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { FakeClock, sequentialIds } from "../../src/base/clock.ts";
import {
  listActiveWorkers,
  listExpiredRuns,
  listRuns,
  readRunStatus,
} from "../../src/state/queries.ts";
import { hostStatusCounts } from "../../src/state/status-counts.ts";
import { createCheckpointRunner } from "../../src/state/checkpoint-runner.ts";
import {
  createRetentionPass,
  DAY_MS,
  runRetentionPass,
} from "../../src/state/retention/retention-pass.ts";
import { closeStateStore, openStateStore, type StateStore } from "../../src/state/store.ts";
import { groupTransaction } from "../../src/state/transactions.ts";
import { recordNodeUpdate } from "../../src/state/transitions/node-attempts.ts";
import { createViewerData, refreshViewerData } from "../../src/viewer/viewer-data.ts";
import { runDoctor } from "../../src/state/doctor.ts";
import { acquireHostClaim } from "../../src/state/host-claim.ts";
import type { Claim } from "../../src/state/claims.ts";
import { activeRun, endedRun } from "../support/ended-runs.ts";
import { percentile, round } from "./_figures.ts";
import { STEP_GAP_MS } from "../../src/host/retention-runner.ts";
import { replicateRuns } from "./_replicate-runs.ts";
import { largeRuns } from "./_large-runs.ts";
import { constants as perfConstants, PerformanceObserver } from "node:perf_hooks";
import { createStatementTrace, type TracedStatement } from "./_statement-trace.ts";

const args = process.argv.slice(2);
const SMOKE = args.includes("--smoke");
const RUNS = SMOKE ? 200 : Number(args[args.indexOf("--runs") + 1] ?? "") || 100_000;
const ACTIVE = 50;
/**
 * `--prune-only`: the prune and its figures alone (no reads, doctor or large runs: those print
 * null), to compare the pass's own settings quickly.
 */
const PRUNE_ONLY = args.includes("--prune-only") && !SMOKE;
/** `--budget-ms N`: the pass's time budget per transaction (default: the pass's own). */
/** `--checkpoint-frames N`: WAL frames between the pass's own checkpoints (default: the pass's). */
const CHECKPOINT_FRAMES = args.includes("--checkpoint-frames")
  ? Number(args[args.indexOf("--checkpoint-frames") + 1])
  : undefined;
/**
 * `--gap-sleep-ms N`: a timer of N ms between two steps of the pass, unless a checkpoint is waited
 * for, as the host's runner does (default: its pause between the steps of a commanded pass,
 * `STEP_GAP_MS`).
 */
const GAP_SLEEP_MS = args.includes("--gap-sleep-ms")
  ? Number(args[args.indexOf("--gap-sleep-ms") + 1])
  : STEP_GAP_MS;
/**
 * `--checkpoints thread|inline`: the pass's checkpoints on the checkpoint runner's thread, as the
 * host runs them (default), or on the event loop (the baseline from before the runner).
 */
const CHECKPOINTS = args.includes("--checkpoints")
  ? args[args.indexOf("--checkpoints") + 1]
  : "thread";
if (CHECKPOINTS !== "thread" && CHECKPOINTS !== "inline") {
  throw new Error(`--checkpoints must be thread or inline, not ${CHECKPOINTS}`);
}
/**
 * `--transaction-runs N`: runs one prune transaction takes at most (default: the pass's own; 1:
 * a run a transaction, as before several went in one).
 */
const TRANSACTION_RUNS = args.includes("--transaction-runs")
  ? Number(args[args.indexOf("--transaction-runs") + 1])
  : undefined;
/**
 * `--trace-ms N`: the pass's write transactions of N ms or more (default 10; 0: none) are traced
 * statement by statement (_statement-trace.ts: verb, table, rows, time), with the main thread's
 * CPU, run-queue and blocked time and its storage reads and writes (/proc/thread-self/io) in them:
 * `prune.traced` keeps the ones with the most CPU and the most blocked.
 */
const TRACE_MS = args.includes("--trace-ms") ? Number(args[args.indexOf("--trace-ms") + 1]) : 10;
/** `--stall-probe-s N`: seconds of the busy-loop probe before the pass (default 5; 0: none). */
const STALL_PROBE_S = args.includes("--stall-probe-s")
  ? Number(args[args.indexOf("--stall-probe-s") + 1])
  : SMOKE
  ? 0.2
  : 5;
const BUDGET_MS = args.includes("--budget-ms")
  ? Number(args[args.indexOf("--budget-ms") + 1])
  : undefined;
/** Ended runs built through the real transitions; the rest are SQL copies of them. */
const TEMPLATES = 30;
/** One run a second: 100,000 runs span about 28 hours, 40 days ago. */
const SPACING_MS = 1_000;
const root = mkdtempSync(join(tmpdir(), "piw-bench-retention-"));

interface Db {
  dir: string;
  clock: FakeClock;
  active: { runId: string; claim: Claim; attemptId: string }[];
  /** The file with the template runs as they ended (before compaction). */
  wholeBytes: number;
}

/** Builds a database: `ended` runs that ended 40 days ago, then the active ones, now. */
function build(name: string, ended: number): Db {
  const dir = join(root, name);
  const clock = new FakeClock(Date.now() - 40 * DAY_MS);
  const store = openStateStore({ stateDir: dir, clock, ids: sequentialIds() });
  store.db.exec("PRAGMA synchronous = OFF");
  const host = acquireHostClaim(store, { ownerId: "bench", token: "seed", ttlMs: 2 ** 42 });
  const templates: string[] = [];
  groupTransaction(store, () => {
    for (let k = 0; k < Math.min(ended, TEMPLATES); k++) {
      templates.push(endedRun(store, { hostEpoch: host.epoch, attempts: 2 + (k % 3) }));
      clock.advance(SPACING_MS);
    }
  });
  store.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  const wholeBytes = statSync(join(dir, "state.sqlite")).size;
  clock.set(Date.now());
  // What a running host did to these runs since: each compacted an hour after its end, the
  // viewer feed trimmed, freed pages given back (nothing is past a 100-year period). The copies
  // are made from the compacted templates, without viewer deltas (trimmed long ago).
  runRetentionPass(store, { keepDays: 36_500 });
  replicateRuns(store, { templates, total: ended, spacingMs: SPACING_MS, feed: false });
  const active = Array.from({ length: ACTIVE }, () => activeRun(store, { hostEpoch: host.epoch }));
  store.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  closeStateStore(store);
  return { dir, clock, active, wholeBytes };
}

function open(db: Db): StateStore {
  const store = openStateStore({ stateDir: db.dir, clock: db.clock, ids: sequentialIds() });
  store.db.exec("PRAGMA synchronous = OFF");
  return store;
}

/**
 * Median ms of `fn` on each database over `n` calls, the two taken in turns (after 3 warm-up
 * calls each), so both see the same machine load.
 */
function pairedTime<T>(
  n: number,
  dbs: readonly [T, T],
  fn: (db: T, i: number) => void,
): [number, number] {
  for (let i = 0; i < 3; i++) for (const db of dbs) fn(db, i);
  const times: [number[], number[]] = [[], []];
  for (let i = 0; i < n; i++) {
    for (const k of i % 2 === 0 ? [0, 1] : [1, 0]) {
      const started = performance.now();
      fn(dbs[k], i);
      times[k].push(performance.now() - started);
    }
  }
  return [percentile(times[0], 50), percentile(times[1], 50)];
}

type Reads = Record<"runStatus" | "runList" | "viewerTick" | "hostStart", number>;

/** The reads of the baseline and of the measured database, in turns. */
function reads(base: Db, measured: Db): [Reads, Reads] {
  const dbs = [base, measured] as const;
  const stores = new Map(dbs.map((db) => [db, open(db)]));
  let updates = 0;
  try {
    const runStatus = pairedTime(400, dbs, (db, i) => {
      readRunStatus(stores.get(db)!, db.active[i % ACTIVE].runId);
    });
    const runList = pairedTime(200, dbs, (db) => {
      listRuns(stores.get(db)!, { all: false, limit: 50 });
    });
    const viewers = new Map(dbs.map((db) => {
      const viewer = createViewerData(stores.get(db)!, { all: true });
      refreshViewerData(viewer);
      return [db, viewer];
    }));
    const viewerTick = pairedTime(100, dbs, (db, i) => {
      const run = db.active[i % ACTIVE];
      recordNodeUpdate(stores.get(db)!, run.claim, {
        attemptId: run.attemptId,
        type: "progress",
        key: "p",
        data: { completed: ++updates, total: 1000 },
      });
      refreshViewerData(viewers.get(db)!);
    });
    for (const store of stores.values()) closeStateStore(store);
    const hostStart = pairedTime(9, dbs, (db) => {
      const s = openStateStore({
        stateDir: db.dir,
        clock: db.clock,
        ids: sequentialIds(),
        checkIntegrity: true,
      });
      listExpiredRuns(s);
      listActiveWorkers(s);
      hostStatusCounts(s);
      closeStateStore(s);
    });
    const pick = (k: 0 | 1): Reads => ({
      runStatus: runStatus[k],
      runList: runList[k],
      viewerTick: viewerTick[k],
      hostStart: hostStart[k],
    });
    return [pick(0), pick(1)];
  } finally {
    for (const store of stores.values()) if (store.db.isOpen) closeStateStore(store);
  }
}

/** Doctor's findings on the database: [] when clean. */
function doctorFindings(db: Db): string[] {
  const report = runDoctor({ stateDir: db.dir, clock: db.clock });
  return [
    ...report.integrity,
    ...report.violations.map((v) => v.code),
    ...(report.checkError ? [report.checkError] : []),
  ];
}

/** The main thread's time on a CPU and waiting for one (Linux /proc; zeros elsewhere). */
function schedstat(): { cpuMs: number; waitMs: number } {
  try {
    const [cpu, wait] = readFileSync("/proc/thread-self/schedstat", "utf8").split(" ").map(Number);
    return { cpuMs: cpu / 1e6, waitMs: wait / 1e6 };
  } catch {
    return { cpuMs: 0, waitMs: 0 };
  }
}

/**
 * The main thread's I/O so far (Linux /proc; zeros elsewhere): bytes it read from and caused to
 * be written to storage (not the page cache's), and its read and write calls.
 */
function threadIo(): { readBytes: number; writeBytes: number; reads: number; writes: number } {
  try {
    const text = readFileSync("/proc/thread-self/io", "utf8");
    const field = (name: string) =>
      Number(new RegExp(`^${name}: (\\d+)`, "m").exec(text)?.[1] ?? 0);
    return {
      readBytes: field("read_bytes"),
      writeBytes: field("write_bytes"),
      reads: field("syscr"),
      writes: field("syscw"),
    };
  } catch {
    return { readBytes: 0, writeBytes: 0, reads: 0, writes: 0 };
  }
}

/**
 * Time the guest kernel counts as a thread's CPU but the thread did not run: on this machine's
 * virtual CPUs `/proc/stat` reports no steal and interrupt time is charged to whichever thread
 * was running (no `CONFIG_IRQ_TIME_ACCOUNTING`), so a transaction can show tens of ms "on a CPU"
 * in a statement of one row. `stallProbe`: a busy loop in 1 ms windows (one schedstat read each), for `ms`:
 * the windows that took 5 ms or more, and of those the ones the kernel counted 10 ms or more on a
 * CPU (not in its run queue; a running thread's count lags by up to a tick, 4 ms at HZ=250). `cpuTicks`: the jiffies all CPUs accounted so far (user to softirq); their
 * shortfall against wall time over the pass is time the guest never saw.
 */
function stallProbe(ms: number) {
  const end = performance.now() + ms;
  const worst: { ms: number; cpuMs: number; runQueueMs: number }[] = [];
  let windows = 0;
  let over5 = 0;
  let cpuOver10 = 0;
  let before = schedstat();
  let started = performance.now();
  while (started < end) {
    let now = performance.now();
    while (now - started < 1) now = performance.now();
    const after = schedstat();
    const wall = now - started;
    windows++;
    if (wall >= 5) {
      over5++;
      const cpuMs = after.cpuMs - before.cpuMs;
      if (cpuMs >= 10) cpuOver10++;
      worst.push({
        ms: round(wall),
        cpuMs: round(cpuMs),
        runQueueMs: round(after.waitMs - before.waitMs),
      });
      worst.sort((a, b) => b.cpuMs - a.cpuMs);
      if (worst.length > 5) worst.pop();
    }
    before = after;
    started = performance.now();
  }
  return { ms, windows, over5ms: over5, onCpuOver10ms: cpuOver10, worst };
}

function cpuTicks(): number {
  try {
    const fields = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(
      1,
      8,
    );
    return fields.reduce((sum, v) => sum + Number(v), 0);
  } catch {
    return 0;
  }
}

/** A transaction's time and its split (ms): on a CPU, in the run queue, blocked. */
interface TransactionSplit {
  ms: number;
  commitMs: number;
  cpuMs: number;
  runQueueMs: number;
  blockedMs: number;
  /** The first transaction after one of the pass's checkpoints: it restarts the WAL, whose
   * header SQLite syncs (at any `synchronous` but OFF) under the write lock. */
  restartsWal: boolean;
}

/** A traced transaction (`--trace-ms`). */
interface Traced extends TransactionSplit {
  phase: string;
  gcMs?: number;
  start: number;
  io: { readBytes: number; writeBytes: number; reads: number; writes: number };
  statements: TracedStatement[];
}

/** Keeps the `size` entries with the most `key` (a short sorted list). */
function keepTop(list: Traced[], entry: Traced, key: (t: Traced) => number, size = 8): void {
  if (list.length === size && key(entry) <= key(list[size - 1])) return;
  list.push(entry);
  list.sort((a, b) => key(b) - key(a));
  if (list.length > size) list.pop();
}

const GC_KINDS: Record<number, string> = {
  [perfConstants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [perfConstants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [perfConstants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb",
};

/**
 * Samples recorded as the pass goes, kept in a typed array's buffer (outside the collector's
 * heap): plain arrays of 100,000 numbers would grow the old generation as the pass goes, and a
 * collection of it pauses the thread inside whichever transaction it lands in: the benchmark's
 * own, not the host's.
 */
class Samples {
  #buffer = new Float64Array(4096);
  n = 0;
  push(value: number): void {
    if (this.n === this.#buffer.length) {
      const next = new Float64Array(this.n * 2);
      next.set(this.#buffer);
      this.#buffer = next;
    }
    this.#buffer[this.n++] = value;
  }
  values(): number[] {
    return Array.from(this.#buffer.subarray(0, this.n));
  }
}

/** p50, p99 and max of the samples. */
function spread(samples: Samples): { p50: number; p99: number; max: number } {
  const values = samples.values();
  return {
    p50: round(percentile(values, 50)),
    p99: round(percentile(values, 99)),
    max: round(values.reduce((a, b) => Math.max(a, b), 0)),
  };
}

/** The collector's time inside [start, end] (ms). */
function gcOverlap(start: number, end: number, gcs: readonly { start: number; end: number }[]) {
  let ms = 0;
  for (const gc of gcs) ms += Math.max(0, Math.min(end, gc.end) - Math.max(start, gc.start));
  return ms;
}

/**
 * The collector's pauses inside the pass's transactions (`spans`: start, end pairs in order):
 * their sum, the longest inside one transaction, and the transactions with 5 ms or more of them.
 */
function gcInside(
  spans: readonly number[],
  gcs: readonly { start: number; end: number; kind: number }[],
) {
  const sorted = [...gcs].sort((a, b) => a.start - b.start);
  let totalMs = 0;
  let maxMs = 0;
  let over5ms = 0;
  let g = 0;
  for (let i = 0; i < spans.length; i += 2) {
    const [start, end] = [spans[i], spans[i + 1]];
    while (g < sorted.length && sorted[g].end < start) g++;
    let ms = 0;
    for (let k = g; k < sorted.length && sorted[k].start <= end; k++) {
      ms += Math.max(0, Math.min(end, sorted[k].end) - Math.max(start, sorted[k].start));
    }
    totalMs += ms;
    maxMs = Math.max(maxMs, ms);
    if (ms >= 5) over5ms++;
  }
  return {
    collections: gcs.length,
    totalMs: round(totalMs),
    maxMs: round(maxMs),
    over5ms,
    longestPauseMs: round(Math.max(0, ...gcs.map((gc) => gc.end - gc.start))),
    // Per kind (minor: a scavenge of the young generation; major: mark-compact; incremental:
    // a step of incremental marking; weakcb: weak callbacks): how many and the longest.
    byKind: Object.fromEntries([...new Set(gcs.map((gc) => gc.kind))].map((kind) => {
      const own = gcs.filter((gc) => gc.kind === kind);
      return [GC_KINDS[kind] ?? String(kind), {
        n: own.length,
        maxMs: round(Math.max(...own.map((gc) => gc.end - gc.start))),
      }];
    })),
  };
}

/** One phase's transactions, as the benchmark sees them. */
interface PhaseFigures {
  lockMs: Samples;
  blockedMs: Samples;
  over20: number;
  blocked5: { n: number; restartsWal: number };
  mostBlocked: TransactionSplit;
}

function newPhaseFigures(): PhaseFigures {
  return {
    lockMs: new Samples(),
    blockedMs: new Samples(),
    over20: 0,
    blocked5: { n: 0, restartsWal: 0 },
    mostBlocked: { ms: 0, commitMs: 0, cpuMs: 0, runQueueMs: 0, blockedMs: 0, restartsWal: false },
  };
}

const size = (db: Db) => statSync(join(db.dir, "state.sqlite")).size;
const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;

try {
  const buildStarted = performance.now();
  const small = build("small", 0);
  const big = build("big", RUNS);
  const buildMs = performance.now() - buildStarted;
  const attempts = (() => {
    const s = open(big);
    const n = (s.db.prepare("SELECT COUNT(*) AS n FROM node_attempts").get() as { n: number }).n;
    closeStateStore(s);
    return n;
  })();
  // The copies must be as whole as the runs they copy: doctor checks them (a big file's
  // integrity check takes a while, so only up to 20,000 runs).
  const doctorBefore = RUNS <= 20_000 && !PRUNE_ONLY ? doctorFindings(big) : null;
  const smallBytes = size(small);
  const bigBytesBefore = size(big);
  const [smallBefore, before] = PRUNE_ONLY ? [null, null] : reads(small, big);
  const store = open(big);
  // The pass runs at the real store's durability (the host's), not the generator's.
  store.db.exec("PRAGMA synchronous = FULL");
  // Between two transactions of the pass, the host serves: here one node update of an active
  // run in every tenth gap (a one-run write transaction at the host's durability), the
  // baseline the pass's lock holds are compared with.
  const lockMs = new Samples();
  const commitMs = new Samples();
  const stepMs = new Samples();
  const writeMs = new Samples();
  const walPath = join(big.dir, "state.sqlite-wal");
  let walMaxBytes = 0;
  // Each step's wall time split by the main thread's scheduler figures: on a CPU, waiting for
  // one (runnable, another process running), and the rest, off any run queue (blocked: disk).
  const txSpans = new Samples();
  // Called by the statement trace inside the pass's transactions: no allocation (a collection it
  // set off would land in the transaction it measures).
  const rowsNow = () => {
    const rows = pass.report.rows;
    let n = 0;
    for (const table in rows) n += rows[table as keyof typeof rows] ?? 0;
    return n;
  };
  let rowsBefore = 0;
  const slowest: (TransactionSplit & {
    phase: string;
    start: number;
    /** Rows the transaction deleted (the prune phase's). */
    rows: number;
    /** The collector's pauses inside the transaction (ms). */
    gcMs?: number;
    walBytes: number;
  })[] = [];
  // The pass opens with a checkpoint of its own (the file size it reports), so its first
  // transaction restarts the WAL too.
  let checkpointedSinceTx = true;
  const checkpointMs = new Samples();
  // What each checkpoint cost the event loop: all of it in line, the hand-over with the runner.
  const checkpointLoopMs = new Samples();
  const checkpointProblems: string[] = [];
  const checkpointRunner = CHECKPOINTS === "thread"
    ? createCheckpointRunner(store, { onProblem: (m) => checkpointProblems.push(m) })
    : undefined;
  const writeOver20 = { n: 0, cpuMs: 0, runQueueMs: 0, blockedMs: 0 };
  let checkpointFramesMax = 0;
  // The WAL frames the pass's checkpoints found, summed: what the pass (and the host's writes
  // between its steps) wrote to the WAL, each WAL restarting after a complete checkpoint.
  let checkpointFramesTotal = 0;
  let pruneTransactions = 0;
  let lastTx: (typeof slowest)[number] | null = null;
  // Each transaction's own split (its BEGIN to the end of its COMMIT, not its step's), per phase.
  let txSched = schedstat();
  const byPhase = new Map<string, PhaseFigures>();
  const trace = TRACE_MS > 0 ? createStatementTrace(store, () => rowsNow(), TRACE_MS) : null;
  let txIo = trace ? threadIo() : null;
  // The traced transactions with the most CPU and the most time blocked, and how many there were.
  const traced = { n: 0, byCpu: [] as Traced[], byBlocked: [] as Traced[] };
  const pass = createRetentionPass(store, {
    keepDays: 30,
    ...(BUDGET_MS === undefined ? {} : { stepBudgetMs: BUDGET_MS }),
    ...(CHECKPOINT_FRAMES === undefined ? {} : { checkpointFrames: CHECKPOINT_FRAMES }),
    ...(TRANSACTION_RUNS === undefined ? {} : { transactionRuns: TRANSACTION_RUNS }),
    ...(checkpointRunner ? { checkpointRunner } : {}),
    onTransactionStart: () => {
      if (trace) {
        txIo = threadIo();
        trace.begin();
      }
      txSched = schedstat();
    },
    onTransaction: (phase, ms, commit) => {
      // First: the transaction's span ends here, not after this hook's own reads below.
      const end = performance.now();
      const sched = schedstat();
      const cpu = sched.cpuMs - txSched.cpuMs;
      const wait = sched.waitMs - txSched.waitMs;
      const blocked = Math.max(0, ms - cpu - wait);
      const split: TransactionSplit = {
        ms: round(ms),
        commitMs: round(commit),
        cpuMs: round(cpu),
        runQueueMs: round(wait),
        blockedMs: round(blocked),
        restartsWal: checkpointedSinceTx,
      };
      const statements = trace?.end(ms) ?? null;
      if (statements && txIo) {
        const io = threadIo();
        const entry: Traced = {
          phase,
          ...split,
          start: end - ms,
          io: {
            readBytes: io.readBytes - txIo.readBytes,
            writeBytes: io.writeBytes - txIo.writeBytes,
            reads: io.reads - txIo.reads,
            writes: io.writes - txIo.writes,
          },
          statements,
        };
        traced.n++;
        keepTop(traced.byCpu, entry, (t) => t.cpuMs);
        keepTop(traced.byBlocked, entry, (t) => t.blockedMs);
      }
      let figures = byPhase.get(phase);
      if (!figures) byPhase.set(phase, figures = newPhaseFigures());
      figures.lockMs.push(ms);
      figures.blockedMs.push(blocked);
      if (ms >= 20) figures.over20++;
      if (blocked >= 5) {
        figures.blocked5.n++;
        if (checkpointedSinceTx) figures.blocked5.restartsWal++;
      }
      if (blocked > figures.mostBlocked.blockedMs) {
        figures.mostBlocked = split;
      }
      if (phase === "prune") pruneTransactions++;
      lockMs.push(ms);
      commitMs.push(commit);
      const walBytes = statSync(walPath, { throwIfNoEntry: false })?.size ?? 0;
      walMaxBytes = Math.max(walMaxBytes, walBytes);
      txSpans.push(end - ms);
      txSpans.push(end);
      lastTx = {
        phase,
        start: end - ms,
        rows: rowsNow() - rowsBefore,
        walBytes,
        ...split,
      };
      checkpointedSinceTx = false;
      if (ms >= 20) slowest.push(lastTx);
    },
    onCheckpoint: (ms, frames, loopMs) => {
      checkpointedSinceTx = true;
      checkpointMs.push(ms);
      checkpointLoopMs.push(loopMs);
      checkpointFramesMax = Math.max(checkpointFramesMax, frames);
      checkpointFramesTotal += frames;
      const walBytes = statSync(walPath, { throwIfNoEntry: false })?.size ?? 0;
      walMaxBytes = Math.max(walMaxBytes, walBytes);
    },
  });
  // V8's garbage collections during the pass (start, end on performance.now()'s clock), to
  // attribute a slow transaction's time to a pause of the collector inside it.
  const gcs: { start: number; end: number; kind: number }[] = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcs.push({
        start: e.startTime,
        end: e.startTime + e.duration,
        kind: (e as { detail?: { kind?: number } }).detail?.kind ?? 0,
      });
    }
  });
  gcObserver.observe({ entryTypes: ["gc"] });
  const probe = STALL_PROBE_S > 0 ? stallProbe(STALL_PROBE_S * 1000) : null;
  const ticksBefore = cpuTicks();
  const pruneStarted = performance.now();
  const pruneSched = schedstat();
  const pruneCpu = process.cpuUsage();
  let served = 0;
  let steps = 0;
  for (;;) {
    lastTx = null;
    rowsBefore = rowsNow();
    const stepStarted = performance.now();
    const more = pass.step();
    stepMs.push(performance.now() - stepStarted);
    // Every 10th step a write of the host's own, before the gap (a client's write and the pass's
    // next step are callbacks of their own in the host): enough samples, and the pass is not
    // slowed by 100,000 synced commits.
    if (more && ++steps % 10 === 0) {
      const run = big.active[served++ % ACTIVE];
      const writeSched = schedstat();
      const started = performance.now();
      recordNodeUpdate(store, run.claim, {
        attemptId: run.attemptId,
        type: "progress",
        key: "p",
        data: { completed: served, total: 1e9 },
      });
      const wrote = performance.now() - started;
      checkpointedSinceTx = false; // this write restarted the WAL, if it was due
      writeMs.push(wrote);
      if (wrote >= 20) {
        const after = schedstat();
        const cpu = after.cpuMs - writeSched.cpuMs;
        const wait = after.waitMs - writeSched.waitMs;
        writeOver20.n++;
        writeOver20.cpuMs += cpu;
        writeOver20.runQueueMs += wait;
        writeOver20.blockedMs += Math.max(0, wrote - cpu - wait);
      }
    }
    // Between two steps the event loop runs, as the host's runner gives it back (a checkpoint on
    // the runner's thread, else the step gap's timer): V8 runs its posted tasks there, its
    // incremental marking among them, which a thread asleep in Atomics.wait left to the
    // allocations inside the next transaction.
    const waiting = pass.waiting();
    if (waiting) await waiting;
    else await new Promise((resolve) => setTimeout(resolve, GAP_SLEEP_MS)); // 0: a turn of the loop
    if (!more) break;
  }
  const pruneMs = performance.now() - pruneStarted;
  // USER_HZ 100 on Linux: the share of the CPUs' time over the pass that no jiffy accounted.
  const ticksMissing = 1 - (cpuTicks() - ticksBefore) / ((pruneMs / 10) * cpus().length);
  // CPU time of the pass (and the benchmark's writes between its steps): the main thread's, and
  // the process's (the checkpoint thread's too); per run, a figure the machine's load bears on
  // less than wall times.
  const pruneMainCpuMs = schedstat().cpuMs - pruneSched.cpuMs;
  const pruneProcessCpu = process.cpuUsage(pruneCpu);
  const pruneProcessCpuMs = (pruneProcessCpu.user + pruneProcessCpu.system) / 1000;
  // The collector's entries arrive on the event loop: those of the pass's last steps after it.
  await new Promise((resolve) => setTimeout(resolve, 50));
  gcObserver.disconnect();
  const gcInTx = gcInside(txSpans.values(), gcs);
  for (const tx of slowest) tx.gcMs = round(gcOverlap(tx.start, tx.start + tx.ms, gcs));
  for (const tx of [...traced.byCpu, ...traced.byBlocked]) {
    tx.gcMs = round(gcOverlap(tx.start, tx.start + tx.ms, gcs));
  }
  await checkpointRunner?.close();
  store.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  closeStateStore(store);
  // The small database gets the same writes, so after the prune both hold the same history of
  // their active runs and only what the prune left behind differs.
  const smallStore = open(small);
  for (let i = 0; i < served; i++) {
    const run = small.active[i % ACTIVE];
    recordNodeUpdate(smallStore, run.claim, {
      attemptId: run.attemptId,
      type: "progress",
      key: "p",
      data: { completed: i + 1, total: 1e9 },
    });
  }
  smallStore.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  closeStateStore(smallStore);
  const [smallAfter, after] = PRUNE_ONLY ? [null, null] : reads(small, big);
  const doctorAfter = PRUNE_ONLY ? null : doctorFindings(big);
  const rel = (r: Reads, base: Reads) =>
    Object.fromEntries(
      Object.entries(r).map(([k, v]) => [k, ratio(v, base[k as keyof Reads])]),
    );
  console.log(JSON.stringify({
    bench: "retention",
    endedRuns: RUNS,
    activeRuns: ACTIVE,
    nodeAttempts: attempts,
    buildSeconds: Math.round(buildMs / 1000),
    fileBytes: {
      small: smallBytes,
      before: bigBytesBefore,
      after: size(big),
      smallAfter: size(small),
    },
    // Compacted (what a host keeps until the prune), and as the runs ended.
    bytesPerEndedRun: {
      compacted: Math.round((bigBytesBefore - smallBytes) / RUNS),
      whole: Math.round((big.wholeBytes - small.wholeBytes) / Math.min(RUNS, TEMPLATES)),
    },
    bytesPerNodeAttempt: {
      compacted: Math.round((bigBytesBefore - smallBytes) / attempts),
      whole: Math.round(
        (big.wholeBytes - small.wholeBytes) / Math.min(RUNS, TEMPLATES) / (attempts / RUNS),
      ),
    },
    prune: {
      runs: pass.report.runs,
      seconds: round(pruneMs / 1000),
      transactions: pass.report.transactions,
      pruneTransactions,
      runsPerPruneTransaction: round(pass.report.runs / Math.max(1, pruneTransactions)),
      // WAL frames written over the pass (the checkpoints' sum) and per pruned run.
      walFrames: checkpointFramesTotal,
      walFramesPerRun: round(checkpointFramesTotal / Math.max(1, pass.report.runs)),
      cpu: {
        mainMs: Math.round(pruneMainCpuMs),
        processMs: Math.round(pruneProcessCpuMs),
        mainMsPerRun: Math.round((pruneMainCpuMs / Math.max(1, pass.report.runs)) * 1000) / 1000,
      },
      longestLockMs: round(pass.report.longestLockMs),
      longestCommitMs: round(pass.report.longestCommitMs),
      lockMs: {
        ...spread(lockMs),
      },
      commitMs: {
        ...spread(commitMs),
      },
      // A whole step (its transaction and what it does outside one): the host's event loop waits.
      stepMs: {
        ...spread(stepMs),
      },
      walMaxBytes,
      // Each checkpoint's length where it ran (`on`), and what it cost the event loop.
      checkpoints: checkpointMs.n === 0 ? null : {
        on: CHECKPOINTS,
        n: checkpointMs.n,
        ...spread(checkpointMs),
        loopMs: spread(checkpointLoopMs),
        framesMax: checkpointFramesMax,
        problems: checkpointProblems,
      },
      over20ms: slowest.length,
      // The garbage collector's pauses inside the pass's transactions.
      gcInTransactions: gcInTx,
      // Of the transactions over 20 ms: the time their step spent on a CPU, waiting for one, and
      // blocked (disk), summed.
      over20msSplit: {
        cpuMs: round(slowest.reduce((t, x) => t + (x.cpuMs ?? 0), 0)),
        runQueueMs: round(slowest.reduce((t, x) => t + (x.runQueueMs ?? 0), 0)),
        blockedMs: round(slowest.reduce((t, x) => t + (x.blockedMs ?? 0), 0)),
      },
      slowest: slowest.sort((a, b) => b.ms - a.ms).slice(0, 8),
      // `--trace-ms`: the transactions of that length or more, statement by statement (the most
      // CPU, the most blocked: 8 each).
      traced: trace
        ? {
          thresholdMs: TRACE_MS,
          n: traced.n,
          byCpu: traced.byCpu.map(({ start: _start, ...t }) => t),
          byBlocked: traced.byBlocked.map(({ start: _start, ...t }) => t),
        }
        : null,
      // Per phase: how many were over 20 ms, and the slowest with its split.
      over20msByPhase: Object.fromEntries(
        [...new Set(slowest.map((x) => x.phase))].map((phase) => {
          const own = slowest.filter((x) => x.phase === phase);
          return [phase, { n: own.length, slowest: own[0] }];
        }),
      ),
      // The host's own one-run writes between the pass's transactions, same file, same time.
      baselineWriteMs: {
        ...spread(writeMs),
      },
      baselineWritesOver20ms: Object.fromEntries(
        Object.entries(writeOver20).map(([k, v]) => [k, round(v)]),
      ),
      // Per phase: the lock's spread, how many passed 20 ms, the time blocked off any run
      // queue (disk) inside the transactions (their own split), how many were blocked 5 ms or
      // more (and of those, how many restarted the WAL), and the most blocked one.
      phases: Object.fromEntries(
        [...byPhase].map(([phase, f]) => [phase, {
          n: f.lockMs.n,
          lockMs: spread(f.lockMs),
          over20ms: f.over20,
          blockedMs: spread(f.blockedMs),
          blocked5ms: f.blocked5,
          mostBlocked: f.mostBlocked,
        }]),
      ),
      longestLockMsByPhase: Object.fromEntries(
        Object.entries(pass.report.longestLockMsByPhase).map(([k, v]) => [k, round(v)]),
      ),
      bytes: pass.report.bytes,
    },
    doctor: { before: doctorBefore, after: doctorAfter },
    // One run with many attempts, one with many events: the prune's longest hold deleting each
    // in one transaction (as before batches) and as the pass does, on copies, in turns.
    largeRuns: PRUNE_ONLY ? null : largeRuns(
      root,
      SMOKE ? { attempts: 100, events: 200 } : { attempts: 5_000, events: 10_000 },
      SMOKE ? 1 : 3,
    ),
    // Each read beside the small database's, taken in turns with it (before, then after).
    ms: { smallBefore, before, smallAfter, after },
    ratioToSmall: before && smallBefore && after && smallAfter
      ? { before: rel(before, smallBefore), after: rel(after, smallAfter) }
      : null,
    // Time the machine took from the benchmark's thread unseen (stallProbe, cpuTicks).
    machine: {
      stallProbe: probe,
      ticksMissingShare: ticksBefore > 0 ? Math.round(ticksMissing * 1000) / 1000 : null,
    },
    load: (await import("node:os")).loadavg().map((l) => round(l)),
  }));
} finally {
  rmSync(root, { recursive: true, force: true });
}

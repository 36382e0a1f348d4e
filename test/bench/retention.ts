/**
 * `npm run bench -- retention [--runs N] [--budget-ms N] [--checkpoints thread|inline]
 * [--checkpoint-frames N] [--transaction-runs N] [--gap-sleep-ms N] [--trace-ms N] [--stall-probe-s N]
 * [--host-autocheckpoint N] [--prune-only] [--smoke]` (smoke: 200 runs; the arguments:
 * _retention-args.ts): a state
 * database with N (default 100,000) ended runs of a realistic shape plus 50 active runs, against
 * one with only the 50 active runs. Thirty runs are built through the real transitions
 * (test/support/ended-runs.ts: attempts with outputs and updates, a managed effect, a
 * notification, a human decision, client and worker receipts, two worker epochs, a completion
 * turn), ended 40 days ago; then what a running host did to them since (a pass that compacts
 * them and trims the viewer feed, prunes nothing); the rest are SQL copies of the compacted
 * templates under new ids (_replicate-runs.ts), one run a second.
 *
 * The pass runs as the host runs a commanded one (`pi-workflows prune`): its checkpoint cycles
 * (`COMMANDED_CHECKPOINT_FRAMES`) and the host's automatic checkpoint above them while it runs.
 *
 * Prints one JSON line: file sizes before and after a prune (keepDays 30), bytes per ended run
 * and per node attempt (compacted; and as the runs ended, from the templates), the prune's write transactions (the
 * longest, p50/p99, the longest COMMIT alone; runs per prune transaction; WAL frames written, in all
 * and per pruned run, as the pass's checkpoints found them) beside the host's own one-run writes served
 * between them (the baseline: same file, same moment; every 10th step, each followed by a run.status
 * read of an active run, `baselineReadMs`), the pass's WAL restarts found by the WAL's salt
 * (`walRestarts`: their COMMIT and hold against the other COMMITs, and the host writes that
 * restarted it), doctor's findings, and run.status,
 * run.list, viewer tick and host start-up times before and after, each taken in turns with the
 * small database's (ratios), with the load average.
 *
 * The reads are the state queries the host's handlers and the viewer run (in process, so the
 * times are the database's, not the socket's); host start-up is the open with the integrity
 * check plus the recovery reads a starting host makes before it serves.
 *
 * Its parts: the databases and their reads (_retention-databases.ts), the machine's figures
 * (_retention-machine.ts), the samples and a transaction's split (_retention-samples.ts), V8's
 * collections against the transactions (_retention-gc.ts).
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { createCheckpointRunner } from "../../src/state/checkpoint-runner.ts";
import { createRetentionPass } from "../../src/state/retention/retention-pass.ts";
import { closeStateStore, WAL_AUTOCHECKPOINT_FRAMES } from "../../src/state/store.ts";
import { recordNodeUpdate } from "../../src/state/transitions/node-attempts.ts";
import { readRunStatus } from "../../src/state/queries.ts";
import { readWalPosition, type WalPosition } from "../../src/state/retention/wal-frames.ts";
import {
  COMMANDED_CHECKPOINT_FRAMES,
  raiseAutocheckpoint,
} from "../../src/state/retention/pass-checkpoints.ts";
import { round } from "./_figures.ts";
import { largeRuns } from "./_large-runs.ts";
import { PerformanceObserver } from "node:perf_hooks";
import { createStatementTrace } from "./_statement-trace.ts";
import {
  BUDGET_MS,
  CHECKPOINT_FRAMES,
  CHECKPOINTS,
  GAP_SLEEP_MS,
  HOST_AUTOCHECKPOINT,
  PRUNE_ONLY,
  RUNS,
  SMOKE,
  STALL_PROBE_S,
  TRACE_MS,
  TRANSACTION_RUNS,
} from "./_retention-args.ts";
import {
  ACTIVE,
  build,
  doctorFindings,
  open,
  ratio,
  type Reads,
  reads,
  size,
  TEMPLATES,
} from "./_retention-databases.ts";
import { cpuTicks, schedstat, stallProbe, threadIo } from "./_retention-machine.ts";
import {
  keepTop,
  newPhaseFigures,
  type PhaseFigures,
  Samples,
  spread,
  type Traced,
  type TransactionSplit,
} from "./_retention-samples.ts";
import { gcInside, gcOverlap } from "./_retention-gc.ts";

const root = mkdtempSync(join(tmpdir(), "piw-bench-retention-"));

try {
  const buildStarted = performance.now();
  const small = build(root, "small", 0);
  const big = build(root, "big", RUNS);
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
  // As the host runs a commanded pass (retention-runner.ts): its cycles, the host's automatic
  // checkpoint above them until the pass ends.
  const checkpointFrames = CHECKPOINT_FRAMES ?? COMMANDED_CHECKPOINT_FRAMES;
  const restoreAutocheckpoint = raiseAutocheckpoint(
    store,
    HOST_AUTOCHECKPOINT ?? checkpointFrames + WAL_AUTOCHECKPOINT_FRAMES,
  );
  // Between two transactions of the pass, the host serves: here one node update of an active
  // run in every tenth gap (a one-run write transaction at the host's durability), the
  // baseline the pass's lock holds are compared with.
  const lockMs = new Samples();
  const commitMs = new Samples();
  const stepMs = new Samples();
  const writeMs = new Samples();
  const readMs = new Samples();
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
  // The WAL's salt before each transaction: a new one after it means the transaction restarted
  // the WAL (and synced its new header under the lock), whoever checkpointed before it.
  let txWal: WalPosition | null = null;
  const restartCommits = { pass: new Samples(), passLock: new Samples(), other: new Samples() };
  const restartWrites = { restart: new Samples(), other: new Samples() };
  const byPhase = new Map<string, PhaseFigures>();
  const trace = TRACE_MS > 0 ? createStatementTrace(store, () => rowsNow(), TRACE_MS) : null;
  let txIo = trace ? threadIo() : null;
  // The traced transactions with the most CPU and the most time blocked, and how many there were.
  const traced = { n: 0, byCpu: [] as Traced[], byBlocked: [] as Traced[] };
  const pass = createRetentionPass(store, {
    keepDays: 30,
    ...(BUDGET_MS === undefined ? {} : { stepBudgetMs: BUDGET_MS }),
    checkpointFrames,
    ...(TRANSACTION_RUNS === undefined ? {} : { transactionRuns: TRANSACTION_RUNS }),
    ...(checkpointRunner ? { checkpointRunner } : {}),
    onTransactionStart: () => {
      // The WAL position first: its header read is not the traced transaction's io.
      txWal = readWalPosition(store.path);
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
      // The traced io before the WAL position's read below.
      const io = trace ? threadIo() : null;
      const walNow = readWalPosition(store.path);
      if (txWal && walNow && walNow.salt !== txWal.salt) {
        restartCommits.pass.push(commit);
        restartCommits.passLock.push(ms);
      } else restartCommits.other.push(commit);
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
      if (statements && txIo && io) {
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
      const writeWal = readWalPosition(store.path);
      const writeSched = schedstat();
      const started = performance.now();
      recordNodeUpdate(store, run.claim, {
        attemptId: run.attemptId,
        type: "progress",
        key: "p",
        data: { completed: served, total: 1e9 },
      });
      const wrote = performance.now() - started;
      // The write's split right after it, before the reads below add theirs.
      const wroteSched = schedstat();
      const wroteWal = readWalPosition(store.path);
      (writeWal && wroteWal && writeWal.salt !== wroteWal.salt
        ? restartWrites.restart
        : restartWrites.other).push(wrote);
      checkpointedSinceTx = false; // this write restarted the WAL, if it was due
      writeMs.push(wrote);
      // And a read of the host's (run.status of an active run) beside the pass's WAL.
      const reading = performance.now();
      readRunStatus(store, run.runId);
      readMs.push(performance.now() - reading);
      if (wrote >= 20) {
        const cpu = wroteSched.cpuMs - writeSched.cpuMs;
        const wait = wroteSched.waitMs - writeSched.waitMs;
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
  restoreAutocheckpoint();
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
      // The host's run.status of an active run between the pass's transactions.
      baselineReadMs: spread(readMs),
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
      // The pass's transactions that restarted the WAL (a new salt after them): their COMMIT (the
      // new header's fsync in it) and whole hold, against the other transactions' COMMIT; the
      // host's writes likewise (each syncs its commit).
      walRestarts: {
        n: restartCommits.pass.n,
        commitMs: spread(restartCommits.pass),
        lockMs: spread(restartCommits.passLock),
        over20ms: restartCommits.passLock.values().filter((ms) => ms >= 20).length,
        othersCommitMs: spread(restartCommits.other),
        hostWrites: {
          restarting: { n: restartWrites.restart.n, ...spread(restartWrites.restart) },
          others: { n: restartWrites.other.n, ...spread(restartWrites.other) },
        },
      },
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

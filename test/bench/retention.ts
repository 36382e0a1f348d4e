/**
 * `npm run bench -- retention [--runs N] [--smoke]` (smoke: 200 runs): a state database with N (default 100,000) ended runs
 * of a realistic shape (test/support/ended-runs.ts: three attempts with outputs and updates, a
 * managed effect, a notification, a human decision, client and worker receipts, two worker
 * epochs, a completion turn) plus 50 active runs, against one with only the 50 active runs.
 * Prints one JSON line: file sizes before and after a prune (keepDays 30; the ended runs ended
 * 40 days ago), the prune's longest write transaction, and run.status, run.list, viewer tick and
 * host start-up times before and after, each beside the small database's (ratios), and the bytes
 * stored per ended run and per node attempt.
 *
 * The reads are the state queries the host's handlers and the viewer run (in process, so the
 * times are the database's, not the socket's); host start-up is the open with the integrity
 * check plus the recovery reads a starting host makes before it serves.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeClock, sequentialIds } from "../../src/state/clock.ts";
import {
  listActiveWorkers,
  listExpiredRuns,
  listRuns,
  readRunStatus,
} from "../../src/state/queries.ts";
import { hostStatusCounts } from "../../src/state/status-counts.ts";
import { DAY_MS, runRetentionPass } from "../../src/state/retention/retention-pass.ts";
import { closeStateStore, openStateStore, type StateStore } from "../../src/state/store.ts";
import { groupTransaction } from "../../src/state/transactions.ts";
import { recordNodeStarted, recordNodeUpdate } from "../../src/state/transitions/node-attempts.ts";
import { createViewerData, refreshViewerData } from "../../src/viewer/viewer-data.ts";
import { acquireHostClaim } from "../../src/state/host-claim.ts";
import type { Claim } from "../../src/state/claims.ts";
import { endedRun, startRun } from "../support/ended-runs.ts";
import { percentile, round } from "./_figures.ts";

const args = process.argv.slice(2);
const SMOKE = args.includes("--smoke");
const RUNS = SMOKE ? 200 : Number(args[args.indexOf("--runs") + 1] ?? "") || 100_000;
const ACTIVE = 50;
const root = mkdtempSync(join(tmpdir(), "piw-bench-retention-"));

interface Db {
  dir: string;
  clock: FakeClock;
  active: { runId: string; claim: Claim; attemptId: string }[];
}

/** Builds a database: `ended` runs that ended 40 days ago, then the active ones, now. */
function build(name: string, ended: number): Db {
  const dir = join(root, name);
  const clock = new FakeClock(Date.now() - 40 * DAY_MS);
  const store = openStateStore({ stateDir: dir, clock, ids: sequentialIds() });
  store.db.exec("PRAGMA synchronous = OFF");
  const host = acquireHostClaim(store, { ownerId: "bench", token: "seed", ttlMs: 2 ** 42 });
  for (let i = 0; i < ended; i += 100) {
    groupTransaction(store, () => {
      for (let k = i; k < Math.min(ended, i + 100); k++) {
        endedRun(store, { hostEpoch: host.epoch, attempts: 2 + (k % 3) });
        clock.advance(1_000);
      }
    });
  }
  clock.set(Date.now());
  const active = [];
  for (let i = 0; i < ACTIVE; i++) {
    const { runId, claim } = startRun(store, { hostEpoch: host.epoch });
    const attemptId = store.ids.next("attempt");
    recordNodeStarted(store, claim, {
      attemptId,
      nodeId: "work",
      nodeKind: "agent",
      effect: "pure",
      deadlineAt: null,
    });
    active.push({ runId, claim, attemptId });
  }
  store.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  closeStateStore(store);
  return { dir, clock, active };
}

function open(db: Db): StateStore {
  const store = openStateStore({ stateDir: db.dir, clock: db.clock, ids: sequentialIds() });
  store.db.exec("PRAGMA synchronous = OFF");
  return store;
}

/** Median ms of `fn` over `n` calls (after 3 warm-up calls). */
function time(n: number, fn: (i: number) => void): number {
  for (let i = 0; i < 3; i++) fn(i);
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    fn(i);
    times.push(performance.now() - started);
  }
  return percentile(times, 50);
}

function reads(db: Db) {
  const store = open(db);
  let updates = 0;
  try {
    const runStatus = time(400, (i) => readRunStatus(store, db.active[i % ACTIVE].runId));
    const runList = time(200, () => listRuns(store, { all: false, limit: 50 }));
    const viewer = createViewerData(store, { all: true });
    refreshViewerData(viewer);
    const viewerTick = time(100, (i) => {
      const run = db.active[i % ACTIVE];
      recordNodeUpdate(store, run.claim, {
        attemptId: run.attemptId,
        type: "progress",
        key: "p",
        data: { completed: ++updates, total: 1000 },
      });
      refreshViewerData(viewer);
    });
    closeStateStore(store);
    const hostStart = time(5, () => {
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
    return { runStatus, runList, viewerTick, hostStart };
  } finally {
    if (store.db.isOpen) closeStateStore(store);
  }
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
  const smallBytes = size(small);
  const bigBytesBefore = size(big);
  const smallReads = reads(small);
  const before = reads(big);
  const store = open(big);
  // The pass runs at the real store's durability (the host's), not the generator's.
  store.db.exec("PRAGMA synchronous = FULL");
  const pruneStarted = performance.now();
  const pass = runRetentionPass(store, { keepDays: 30 });
  const pruneMs = performance.now() - pruneStarted;
  store.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  closeStateStore(store);
  const after = reads(big);
  const rel = (r: typeof before) =>
    Object.fromEntries(
      Object.entries(r).map(([k, v]) => [k, ratio(v, smallReads[k as keyof typeof r])]),
    );
  console.log(JSON.stringify({
    bench: "retention",
    endedRuns: RUNS,
    activeRuns: ACTIVE,
    nodeAttempts: attempts,
    buildSeconds: Math.round(buildMs / 1000),
    fileBytes: { small: smallBytes, before: bigBytesBefore, after: size(big) },
    bytesPerEndedRun: Math.round((bigBytesBefore - smallBytes) / RUNS),
    bytesPerNodeAttempt: Math.round((bigBytesBefore - smallBytes) / attempts),
    prune: {
      runs: pass.report.runs,
      seconds: round(pruneMs / 1000),
      transactions: pass.report.transactions,
      longestLockMs: round(pass.report.longestLockMs),
      longestLockMsByPhase: Object.fromEntries(
        Object.entries(pass.report.longestLockMsByPhase).map(([k, v]) => [k, round(v)]),
      ),
      bytes: pass.report.bytes,
    },
    ms: {
      small: smallReads,
      before,
      after,
    },
    ratioToSmall: { before: rel(before), after: rel(after) },
    load: (await import("node:os")).loadavg().map((l) => round(l)),
  }));
} finally {
  rmSync(root, { recursive: true, force: true });
}

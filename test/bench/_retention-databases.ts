/**
 * The retention benchmark's databases: one with N ended runs of a realistic shape plus the active
 * ones, one with the active ones only, and the reads and checks taken on both in turns.
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { FakeClock, sequentialIds } from "../../src/base/clock.ts";
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
import { recordNodeUpdate } from "../../src/state/transitions/node-attempts.ts";
import { createViewerData, refreshViewerData } from "../../src/viewer/viewer-data.ts";
import { runDoctor } from "../../src/state/doctor.ts";
import { acquireHostClaim } from "../../src/state/host-claim.ts";
import type { Claim } from "../../src/state/claims.ts";
import { activeRun, endedRun } from "../support/ended-runs.ts";
import { percentile } from "./_figures.ts";
import { replicateRuns } from "./_replicate-runs.ts";

/** Active runs in both databases. */
export const ACTIVE = 50;
/** Ended runs built through the real transitions; the rest are SQL copies of them. */
export const TEMPLATES = 30;
/** One run a second: 100,000 runs span about 28 hours, 40 days ago. */
export const SPACING_MS = 1_000;

export interface Db {
  dir: string;
  clock: FakeClock;
  active: { runId: string; claim: Claim; attemptId: string }[];
  /** The file with the template runs as they ended (before compaction). */
  wholeBytes: number;
}

/** Builds a database: `ended` runs that ended 40 days ago, then the active ones, now. */
export function build(root: string, name: string, ended: number): Db {
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

export function open(db: Db): StateStore {
  const store = openStateStore({ stateDir: db.dir, clock: db.clock, ids: sequentialIds() });
  store.db.exec("PRAGMA synchronous = OFF");
  return store;
}

/**
 * Median ms of `fn` on each database over `n` calls, the two taken in turns (after 3 warm-up
 * calls each), so both see the same machine load.
 */
export function pairedTime<T>(
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

export type Reads = Record<"runStatus" | "runList" | "viewerTick" | "hostStart", number>;

/** The reads of the baseline and of the measured database, in turns. */
export function reads(base: Db, measured: Db): [Reads, Reads] {
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
export function doctorFindings(db: Db): string[] {
  const report = runDoctor({ stateDir: db.dir, clock: db.clock });
  return [
    ...report.integrity,
    ...report.violations.map((v) => v.code),
    ...(report.checkError ? [report.checkError] : []),
  ];
}

export const size = (db: Db) => statSync(join(db.dir, "state.sqlite")).size;
export const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;

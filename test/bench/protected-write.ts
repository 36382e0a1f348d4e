/**
 * Protected-write benchmark: in one database with the store's pragmas (WAL, synchronous=FULL),
 * compares the rate of bare single-row commits with the rate of protected, claim-checked
 * lifecycle writes (`recordNodeUpdate`: claim check + renewal, domain upsert, event, viewer
 * delta, revision, all in one `BEGIN IMMEDIATE` transaction). Both run on the same connection,
 * after a warm-up, in alternating rounds (order flipped every round) so disk and machine drift
 * hit both alike; the figures are medians over rounds (a round's ratio compares two adjacent
 * measurements). Afterwards it counts WAL frames per commit of each. Prints one JSON line.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sequentialIds, systemClock } from "../../src/state/clock.ts";
import { acquireHostClaim } from "../../src/state/host-claim.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { recordNodeStarted, recordNodeUpdate } from "../../src/state/transitions/node-attempts.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { claimRunForLaunch, markWorkerLive } from "../../src/state/transitions/run-launch.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 41);
const PER_ROUND = Number(process.env.BENCH_TX ?? 60);

const dir = mkdtempSync(join(tmpdir(), "pi-wf-bench-"));
const store = openStateStore({ stateDir: dir, clock: systemClock, ids: sequentialIds() });
try {
  const { runId } = enqueueRun(store, {
    workflowName: "bench",
    workflowRef: "builtin:bench",
    projectPath: "/bench",
    workflowSource: { root: { kind: "builtin", id: "bench" }, mounted: [] },
    definitionDigest: "sha256:bench",
    input: {},
    inputHash: "sha256:in",
    binding: { executionMode: "headless" },
  });
  const host = acquireHostClaim(store, { ownerId: "bench-host", token: "h", ttlMs: 3_600_000 });
  const { claim } = claimRunForLaunch(store, {
    runId,
    ownerId: "bench-host",
    hostEpoch: host.epoch,
    token: "bench-token",
    ttlMs: 3_600_000,
    workerEpoch: "bench-epoch",
    launchEnvelopeHash: "sha256:env",
  });
  markWorkerLive(store, claim, {
    workerEpoch: "bench-epoch",
    pid: process.pid,
    startIdentity: "x",
  });
  recordNodeStarted(store, claim, {
    attemptId: "bench-attempt",
    nodeId: "step",
    nodeKind: "compute",
    effect: "pure",
    deadlineAt: null,
  });
  // The baseline: one small row per transaction, same connection, same pragmas.
  store.db.exec(
    "CREATE TABLE bench_raw (id INTEGER PRIMARY KEY, run_id TEXT, data TEXT, at INTEGER)",
  );
  const insert = store.db.prepare("INSERT INTO bench_raw (run_id, data, at) VALUES (?, ?, ?)");
  const data = JSON.stringify({ progress: 0.5, message: "working on step" });

  const raw = (n: number) => {
    for (let i = 0; i < n; i++) {
      store.db.exec("BEGIN IMMEDIATE");
      insert.run(runId, data, Date.now());
      store.db.exec("COMMIT");
    }
  };
  let seq = 0;
  const guarded = (n: number) => {
    for (let i = 0; i < n; i++) {
      recordNodeUpdate(store, claim, {
        attemptId: "bench-attempt",
        type: "progress",
        key: `k${seq++ % 8}`,
        data: { progress: 0.5, message: "working on step" },
      });
    }
  };
  // Warm up both paths (statement caches, JIT, WAL growth).
  raw(200);
  guarded(200);
  const rawRates: number[] = [];
  const guardedRates: number[] = [];
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [raw, guarded] : [guarded, raw];
    let rawRate = 0;
    let guardedRate = 0;
    for (const fn of order) {
      const start = performance.now();
      fn(PER_ROUND);
      const rate = PER_ROUND / ((performance.now() - start) / 1000);
      if (fn === raw) rawRate = rate;
      else guardedRate = rate;
    }
    rawRates.push(rawRate);
    guardedRates.push(guardedRate);
    ratios.push(guardedRate / rawRate);
  }
  // Pages each commit writes (WAL frames), measured apart from the timed rounds.
  const pageSize = (store.db.prepare("PRAGMA page_size").get() as { page_size: number })
    .page_size;
  const walPath = `${store.path}-wal`;
  const framesPerTx = (fn: (n: number) => void): number => {
    // After a truncating checkpoint the WAL is empty; then it is a 32-byte header plus frames.
    store.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    fn(100);
    return Math.round((statSync(walPath).size - 32) / (pageSize + 24)) / 100;
  };
  store.db.exec("PRAGMA wal_autocheckpoint = 0");
  const rawFrames = framesPerTx(raw);
  const guardedFrames = framesPerTx(guarded);
  const round3 = (x: number) => Math.round(x * 1000) / 1000;
  console.log(JSON.stringify({
    bench: "protected-write",
    raw_tx_per_s: Math.round(median(rawRates)),
    protected_tx_per_s: Math.round(median(guardedRates)),
    ratio: round3(median(ratios)),
    ratio_p25: round3(quantile(ratios, 0.25)),
    ratio_p75: round3(quantile(ratios, 0.75)),
    raw_frames_per_tx: rawFrames,
    protected_frames_per_tx: guardedFrames,
  }));
} finally {
  closeStateStore(store);
  rmSync(dir, { recursive: true, force: true });
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function median(values: number[]): number {
  return quantile(values, 0.5);
}

/**
 * Protected-write benchmark: in one database with the store's pragmas (WAL, synchronous=FULL),
 * compares the rate of bare single-row commits with the rate of protected, claim-checked
 * lifecycle writes (`recordNodeUpdate`: claim check + renewal, domain upsert, event, viewer
 * delta, revision, all in one `BEGIN IMMEDIATE` transaction). Both run on the same connection,
 * after a warm-up, in alternating rounds (order flipped every round) so disk and machine drift
 * hit both alike; the figures are medians over rounds (a round's ratio compares two adjacent
 * measurements). Afterwards it counts WAL frames per commit of each, and of the protected write
 * as the host makes it for a worker message (`receipt_frames_per_tx`: with the message's receipt,
 * which is stored in the write's event). Prints one JSON line.
 *
 * `grouped_ratio`: 8 concurrent writers (8 runs, each under its own claim) whose writes share
 * one group commit (`groupTransaction`: a savepoint each, one COMMIT), as the host commits the
 * messages of all workers that arrive in one event-loop turn: writes per second ÷ raw commits
 * per second, measured in the same alternating rounds.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sequentialIds, systemClock } from "../../src/base/clock.ts";
import { acquireHostClaim } from "../../src/state/host-claim.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { groupTransaction } from "../../src/state/transactions.ts";
import { recordNodeStarted, recordNodeUpdate } from "../../src/state/transitions/node-attempts.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { claimRunForLaunch, markWorkerLive } from "../../src/state/transitions/run-launch.ts";
import { bySize } from "./_figures.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? bySize(41, 3));
const PER_ROUND = Number(process.env.BENCH_TX ?? bySize(60, 20));
const WRITERS = 8;

const dir = mkdtempSync(join(tmpdir(), "pi-wf-bench-"));
const store = openStateStore({ stateDir: dir, clock: systemClock, ids: sequentialIds() });
try {
  const host = acquireHostClaim(store, { ownerId: "bench-host", token: "h", ttlMs: 3_600_000 });
  const writers = Array.from({ length: WRITERS }, (_, i) => {
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
    const { claim } = claimRunForLaunch(store, {
      runId,
      ownerId: "bench-host",
      hostEpoch: host.epoch,
      token: `bench-token-${i}`,
      ttlMs: 3_600_000,
      workerEpoch: `bench-epoch-${i}`,
      launchEnvelopeHash: "sha256:env",
    });
    markWorkerLive(store, claim, {
      workerEpoch: `bench-epoch-${i}`,
      pid: process.pid,
      startIdentity: "x",
    });
    recordNodeStarted(store, claim, {
      attemptId: `bench-attempt-${i}`,
      nodeId: "step",
      nodeKind: "compute",
      effect: "pure",
      deadlineAt: null,
    });
    return { runId, claim, attemptId: `bench-attempt-${i}` };
  });
  const { runId, claim } = writers[0];
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
        attemptId: writers[0].attemptId,
        type: "progress",
        key: `k${seq++ % 8}`,
        data: { progress: 0.5, message: "working on step" },
      });
    }
  };
  // As the host writes a worker's node.update: with the message's receipt (stored in its event).
  let messageNo = 0;
  const withReceipt = (n: number) => {
    for (let i = 0; i < n; i++) {
      const requestId = `bench-epoch-0.${String(++messageNo).padStart(9, "0")}`;
      recordNodeUpdate(store, claim, {
        attemptId: writers[0].attemptId,
        type: "progress",
        key: `k${seq++ % 8}`,
        data: { progress: 0.5, message: "working on step" },
        receipt: { requestId, requestFingerprint: `sha256:${"0".repeat(64)}` },
      });
    }
  };
  // n writes in groups of WRITERS: one write of each writer per shared commit.
  const grouped = (n: number) => {
    for (let i = 0; i < n; i += WRITERS) {
      groupTransaction(store, () => {
        for (const w of writers) {
          recordNodeUpdate(store, w.claim, {
            attemptId: w.attemptId,
            type: "progress",
            key: `k${seq++ % 8}`,
            data: { progress: 0.5, message: "working on step" },
          });
        }
      });
    }
  };
  // Warm up both paths (statement caches, JIT, WAL growth).
  raw(200);
  guarded(200);
  grouped(200);
  const rawRates: number[] = [];
  const guardedRates: number[] = [];
  const groupedRates: number[] = [];
  const ratios: number[] = [];
  const groupedRatios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [raw, guarded, grouped] : [grouped, guarded, raw];
    const rates = new Map<(n: number) => void, number>();
    for (const fn of order) {
      // A grouped round writes WRITERS times as much, so it lasts about as long as the others.
      const n = fn === grouped ? PER_ROUND * WRITERS : PER_ROUND;
      const start = performance.now();
      fn(n);
      rates.set(fn, n / ((performance.now() - start) / 1000));
    }
    const rawRate = rates.get(raw)!;
    rawRates.push(rawRate);
    guardedRates.push(rates.get(guarded)!);
    groupedRates.push(rates.get(grouped)!);
    ratios.push(rates.get(guarded)! / rawRate);
    groupedRatios.push(rates.get(grouped)! / rawRate);
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
  const receiptFrames = framesPerTx(withReceipt);
  const round3 = (x: number) => Math.round(x * 1000) / 1000;
  console.log(JSON.stringify({
    bench: "protected-write",
    raw_tx_per_s: Math.round(median(rawRates)),
    protected_tx_per_s: Math.round(median(guardedRates)),
    ratio: round3(median(ratios)),
    ratio_p25: round3(quantile(ratios, 0.25)),
    ratio_p75: round3(quantile(ratios, 0.75)),
    grouped_writers: WRITERS,
    grouped_writes_per_s: Math.round(median(groupedRates)),
    grouped_ratio: round3(median(groupedRatios)),
    grouped_ratio_p25: round3(quantile(groupedRatios, 0.25)),
    grouped_ratio_p75: round3(quantile(groupedRatios, 0.75)),
    raw_frames_per_tx: rawFrames,
    protected_frames_per_tx: guardedFrames,
    receipt_frames_per_tx: receiptFrames,
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

/**
 * Protected-write benchmark: in one database with the store's pragmas (WAL, synchronous=FULL),
 * compares the rate of bare single-row commits with the rate of protected, claim-checked
 * lifecycle writes (`recordNodeUpdate`: claim check + renewal, domain upsert, event, viewer
 * delta, revision, all in one `BEGIN IMMEDIATE` transaction). Rounds alternate so disk drift
 * hits both sides alike. Prints one JSON line.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sequentialIds, systemClock } from "../../src/state/clock.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { recordNodeStarted, recordNodeUpdate } from "../../src/state/transitions/node-attempts.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { claimRunForLaunch, markWorkerLive } from "../../src/state/transitions/run-launch.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 40);
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
  const { claim } = claimRunForLaunch(store, {
    runId,
    ownerId: "bench-host",
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
  // Warm up both paths (statement caches, WAL growth).
  raw(50);
  guarded(50);
  let rawMs = 0;
  let guardedMs = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [raw, guarded] : [guarded, raw];
    for (const fn of order) {
      const start = performance.now();
      fn(PER_ROUND);
      const ms = performance.now() - start;
      if (fn === raw) rawMs += ms;
      else guardedMs += ms;
    }
  }
  const total = ROUNDS * PER_ROUND;
  const rawRate = total / (rawMs / 1000);
  const guardedRate = total / (guardedMs / 1000);
  console.log(JSON.stringify({
    bench: "protected-write",
    raw_tx_per_s: Math.round(rawRate),
    protected_tx_per_s: Math.round(guardedRate),
    ratio: Math.round((guardedRate / rawRate) * 1000) / 1000,
  }));
} finally {
  closeStateStore(store);
  rmSync(dir, { recursive: true, force: true });
}

/**
 * `npm run bench -- nodes`: compute-only runs through the real host supervision and one real
 * worker process (every node boundary is a protected, claim-checked SQLite commit with
 * synchronous=FULL). Three runs in one process: 1,000 nodes twice, then 10,000 nodes. The first
 * 1,000-node run is cold, as in a new state directory: Node's compile cache (kept in the state
 * directory) is empty, so the worker compiles its own modules from TypeScript source; it prints
 * `cold_ratio` and `cold_first_node_ms`. The second 1,000-node run is of ANOTHER workflow file,
 * so its module is new to the cache (the source resolver compiles it, as for any new run) while
 * the engine's modules are cached, as for every run after a user's first: that one is `ratio`.
 * Each prints its `nodes_per_s` beside the raw single-row commit rate of a SQLite file with the
 * same pragmas on the same disk, measured right before it (`raw_tx_per_s`), and their ratio
 * (`ratio` for the second 1,000, `ratio_10k` for 10,000). `cost_ratio` is the cost per node at node 10,000 ÷ at node 100 of the
 * long run (each the mean gap between committed node starts over the 100 nodes around it), so a
 * per-node cost that grows with the run's length shows. `first_node_ms` is the fixed start-up
 * part (enqueue to the first committed attempt: spawn, module loading, source checks),
 * `steady_nodes_per_s` the rate after it, and `commits_per_node` the host's commits (a group
 * commit counts once) per node: below 1 when pipelined compute nodes share commits.
 * `host_cpu_us_per_node_10k` is this process's CPU (user + system: the host runs in-process, the
 * worker is a child) per node of the long run: the host's cost without the disk's wait, so it
 * compares builds across disk regimes better than the ratios do.
 * `worker_cpu_us_per_node_10k` is the worker's CPU per node of the long run, from `/proc` (null
 * off Linux), sampled from its first committed node to its last poll before the run completed.
 * `warmup` is how the compile cache warm-up the supervision starts ended (`warmed`, `skipped`,
 * `timedOut`...; null: still running at the end) and `warmup_ms` when the supervision handled
 * that end, in ms after the start (the raw commit measurement holds this process's loop for 2 s,
 * so it can read late), beside `cold_worker_ms`, when the cold run was enqueued.
 *
 * With `credentials`, the long run is started with a provider credential, as a headless run
 * started from a shell with a provider key is (its workers get it for their Pi children); it prints
 * `credentials: true`.
 *
 *   npm run bench -- nodes [nodes=1000] [long=10000] [credentials]   (long=0 skips the long run)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSupervision } from "../../src/host/host-supervision.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import { listAttempts, readRun } from "../../src/state/queries.ts";
import { closeStateStore } from "../../src/state/store.ts";
import { queryAllArgs, queryOneArgs } from "../../src/state/statements.ts";
import { commitCount } from "../../src/state/transactions.ts";
import { benchHostContext, enqueueResolved } from "./_host-context.ts";
import { rawCommitRate } from "./_raw-commits.ts";
import { benchArgs, bySize, RAW_COMMIT_MS } from "./_figures.ts";
import { cpuSamples } from "./_child-cpu.ts";

const NODES = Number(benchArgs[0] ?? bySize(1000, 50));
const LONG = Number(benchArgs[1] ?? bySize(10_000, 200));
const CREDENTIALS = benchArgs[2] === "credentials";
const root = mkdtempSync(join(tmpdir(), "piw-bench-nodes-"));

function workflowSource(count: number, variant = 0): string {
  const nodes = Array.from(
    { length: count },
    (_, i) =>
      `    n${i}: compute({ run: ({ input }) => ({ i: ${i}, seed: input.seed, v: ${variant} }) }),`,
  ).join("\n");
  const edges = Array.from(
    { length: count - 1 },
    (_, i) => `    { from: "n${i}", to: "n${i + 1}" },`,
  )
    .join("\n");
  return `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "many",
  maxSteps: ${count + 10},
  startAt: "n0",
  nodes: {
${nodes}
  },
  edges: [
${edges}
  ],
});
`;
}

const stateDir = join(root, "state");
const project = join(root, "project");
mkdirSync(project, { recursive: true });
const ctx = benchHostContext(stateDir, 30_000);
const store = ctx.store;
// How the compile cache warm-up at supervision start ended, and when (ms after the start).
let benchStarted = performance.now();
const warmup = { outcome: null as string | null, atMs: null as number | null };
ctx.log = (event) => {
  if (event === "compile_cache.warming" || !event.startsWith("compile_cache.")) return;
  warmup.outcome = event.slice("compile_cache.".length);
  warmup.atMs = Math.round(performance.now() - benchStarted);
};
const supervision = createSupervision(ctx, {
  childEnv: { PI_CODING_AGENT_DIR: join(root, "agent") },
});

interface NodesRun {
  nodes: number;
  seconds: number;
  nodesPerS: number;
  raw: number;
  firstNodeMs: number;
  steady: number;
  /** Start time of each committed attempt, in sequence order (ms). */
  starts: number[];
  /** Host commits (shared group commits count once) per node, from enqueue to the end. */
  commitsPerNode: number;
  /** CPU of this process (the host: the worker is a child) per node, µs, enqueue to the end. */
  hostCpuUsPerNode: number;
  /** The worker's CPU per node (µs) from its first committed node to the last sample; null off Linux. */
  workerCpuUsPerNode: number | null;
  /** When the run was enqueued (its worker launched), ms after the supervision started. */
  workerAtMs: number;
}

async function runNodes(count: number, variant = 0, credentials = false): Promise<NodesRun> {
  const workflowPath = join(project, `many-${count}-${variant}.workflow.ts`);
  writeFileSync(workflowPath, workflowSource(count, variant));
  const resolved = await supervision.resolve({
    workflow: workflowPath,
    input: { seed: 1 },
    cwd: project,
  });
  if (!resolved.ok) throw new Error(`Resolve failed: ${resolved.message}`);
  const raw = rawCommitRate(root, RAW_COMMIT_MS);
  const started = performance.now();
  const workerAtMs = started - benchStarted;
  const cpuBefore = process.cpuUsage();
  const commitsBefore = commitCount(store);
  const { runId } = enqueueResolved(store, resolved, {
    projectPath: project,
    ...(credentials ? { credentialNames: ["ANTHROPIC_API_KEY"] } : {}),
  });
  if (credentials) supervision.supplyCredentials(runId, { ANTHROPIC_API_KEY: "bench-not-a-key" });
  supervision.wake();
  await waitUntil(() => listAttempts(store, runId).length > 0, 60_000);
  const firstNode = performance.now();
  const worker = cpuSamples(
    queryOneArgs<{ pid: number | null }>(
      store,
      "SELECT pid FROM run_workers WHERE run_id = ?1 AND status IN ('starting', 'live')",
      runId,
    )?.pid ?? null,
  );
  worker.sample();
  const finished = await waitUntil(() => {
    worker.sample();
    return readRun(store, runId)?.state === "completed";
  }, 1_800_000);
  if (!finished) throw new Error(`Run ended ${readRun(store, runId)?.state}`);
  const ended = performance.now();
  const cpu = process.cpuUsage(cpuBefore);
  const commits = commitCount(store) - commitsBefore;
  const seconds = (ended - started) / 1000;
  const starts = queryAllArgs<{ started_at: number }>(
    store,
    "SELECT started_at FROM node_attempts WHERE run_id = ?1 ORDER BY sequence",
    runId,
  ).map((row) => row.started_at);
  return {
    nodes: count,
    seconds,
    nodesPerS: count / seconds,
    raw,
    firstNodeMs: firstNode - started,
    steady: count / ((ended - firstNode) / 1000),
    starts,
    commitsPerNode: commits / count,
    hostCpuUsPerNode: (cpu.user + cpu.system) / count,
    workerCpuUsPerNode: worker.perEvent(starts),
    workerAtMs,
  };
}

/** Mean ms per node over the (up to) 100 nodes centred on node `at` (1-based), clamped. */
function costAt(starts: number[], at: number): number {
  const hi = Math.min(starts.length - 1, at + 49);
  const lo = Math.max(0, hi - 100);
  return (starts[hi] - starts[lo]) / (hi - lo);
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;
try {
  benchStarted = performance.now();
  supervision.start();
  // As the host does once it reported ready.
  supervision.warmCompileCache();
  const cold = await runNodes(NODES, 1);
  const short = await runNodes(NODES, 2);
  const long = LONG > 0 ? await runNodes(LONG, 0, CREDENTIALS) : null;
  console.log(JSON.stringify({
    bench: "nodes",
    nodes: short.nodes,
    seconds: Math.round(short.seconds * 100) / 100,
    nodes_per_s: Math.round(short.nodesPerS),
    raw_tx_per_s: Math.round(short.raw),
    ratio: r3(short.nodesPerS / short.raw),
    first_node_ms: Math.round(short.firstNodeMs),
    steady_nodes_per_s: Math.round(short.steady),
    commits_per_node: r3(short.commitsPerNode),
    cold_ratio: r3(cold.nodesPerS / cold.raw),
    cold_nodes_per_s: Math.round(cold.nodesPerS),
    cold_first_node_ms: Math.round(cold.firstNodeMs),
    warmup: warmup.outcome,
    warmup_ms: warmup.atMs,
    cold_worker_ms: Math.round(cold.workerAtMs),
    ...(long
      ? {
        nodes_10k: long.nodes,
        ...(CREDENTIALS ? { credentials: true } : {}),
        seconds_10k: Math.round(long.seconds * 100) / 100,
        nodes_per_s_10k: Math.round(long.nodesPerS),
        raw_tx_per_s_10k: Math.round(long.raw),
        ratio_10k: r3(long.nodesPerS / long.raw),
        cost_ms_at_100: r3(costAt(long.starts, 100)),
        cost_ms_at_10k: r3(costAt(long.starts, long.nodes)),
        cost_ratio: r3(costAt(long.starts, long.nodes) / costAt(long.starts, 100)),
        commits_per_node_10k: r3(long.commitsPerNode),
        host_cpu_us_per_node_10k: Math.round(long.hostCpuUsPerNode),
        worker_cpu_us_per_node_10k: long.workerCpuUsPerNode === null
          ? null
          : Math.round(long.workerCpuUsPerNode),
      }
      : {}),
  }));
} finally {
  await supervision.shutdown();
  closeStateStore(store);
  rmSync(root, { recursive: true, force: true });
}

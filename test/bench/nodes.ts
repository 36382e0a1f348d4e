/**
 * `npm run bench -- nodes`: one run of a 1,000-node compute-only workflow through the real host
 * supervision and one real worker process (every node is a `node.started` and a `node.finished`
 * proposal, each one protected, claim-checked SQLite commit with synchronous=FULL). Prints
 * `nodes_per_s` beside the raw single-row commit rate of a SQLite file with the same pragmas on
 * the same disk, measured in the same run (`raw_tx_per_s`), and their ratio. Two commits per
 * node means a ratio near 0.5 is the ceiling. `first_node_ms` is the fixed start-up part (enqueue
 * to the first committed attempt: worker spawn, module loading, source checks) and
 * `steady_nodes_per_s` the rate after it, so per-node work can be told from start-up.
 *
 *   npm run bench -- nodes [nodes=1000]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSupervision } from "../../src/host/supervision/index.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import { listAttempts, readRun } from "../../src/state/queries.ts";
import { closeStateStore } from "../../src/state/store.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { benchHostContext } from "./_host-context.ts";
import { rawCommitRate } from "./_raw-commits.ts";

const NODES = Number(process.argv[2] ?? 1000);
const root = mkdtempSync(join(tmpdir(), "piw-bench-nodes-"));

function workflowSource(count: number): string {
  const nodes = Array.from(
    { length: count },
    (_, i) => `    n${i}: compute({ run: ({ input }) => ({ i: ${i}, seed: input.seed }) }),`,
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
const workflowPath = join(project, "many.workflow.ts");
writeFileSync(workflowPath, workflowSource(NODES));
const ctx = benchHostContext(stateDir, 30_000);
const store = ctx.store;
const supervision = createSupervision(ctx, {
  childEnv: { PI_CODING_AGENT_DIR: join(root, "agent") },
});

try {
  const raw = rawCommitRate(root, 2_000);
  const resolved = await supervision.resolve({
    workflow: workflowPath,
    input: { seed: 1 },
    cwd: project,
  });
  if (!resolved.ok) throw new Error(`Resolve failed: ${resolved.message}`);
  supervision.start();
  const started = performance.now();
  const { runId } = enqueueRun(store, {
    workflowName: resolved.workflowName,
    workflowRef: workflowPath,
    projectPath: project,
    workflowSource: resolved.workflowSource as never,
    definitionDigest: resolved.definitionDigest,
    input: resolved.input as never,
    inputHash: resolved.inputHash,
    binding: { executionMode: "headless" },
  });
  supervision.wake();
  await waitUntil(() => listAttempts(store, runId).length > 0, 60_000);
  const firstNode = performance.now();
  const finished = await waitUntil(() => readRun(store, runId)?.state === "completed", 600_000);
  if (!finished) throw new Error(`Run ended ${readRun(store, runId)?.state}`);
  const ended = performance.now();
  const seconds = (ended - started) / 1000;
  const nodesPerS = NODES / seconds;
  const steady = NODES / ((ended - firstNode) / 1000);
  console.log(JSON.stringify({
    bench: "nodes",
    nodes: NODES,
    seconds: Math.round(seconds * 100) / 100,
    nodes_per_s: Math.round(nodesPerS),
    raw_tx_per_s: Math.round(raw),
    ratio: Math.round((nodesPerS / raw) * 1000) / 1000,
    first_node_ms: Math.round(firstNode - started),
    steady_nodes_per_s: Math.round(steady),
  }));
} finally {
  await supervision.shutdown();
  closeStateStore(store);
  rmSync(root, { recursive: true, force: true });
}

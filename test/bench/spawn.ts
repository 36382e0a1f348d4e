/**
 * `npm run bench -- spawn`: time from a run becoming launchable to its worker's `worker.ready`
 * (claim, spawn, envelope, source check, ready committed), median and p95 over sequential runs,
 * beside the start-up of a bare `node -e 0` measured in the same run. Prints one JSON line.
 *
 * Two worker commands are measured in the same run: `pi-workflows worker` from source (Node
 * strips types at start-up: the command a checkout uses) and the same CLI bundled into one
 * JavaScript file by compile/build.ts's `bundleCli`: the worker-only bundle beside the CLI bundle,
 * which the npm package ships and the host starts workers from (the compiled binary adds a code
 * cache on top). The ratio of each is against the bare `node -e 0` median. Workers start with
 * Node's compile cache in the state directory, as the host starts them.
 *
 * `claim_median_ms` is the part of the ready time before the spawn (scheduler wake-up and the
 * launch claim's commit), over all variants.
 *
 * When the compiled binary exists (`dist/pi-workflows`, or `--binary PATH`) a third variant
 * starts workers from it (`binary_*` fields; `binary: null` when there is none).
 *
 *   npm run bench -- spawn [runs=15] [--binary PATH]
 */
import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createSupervision } from "../../src/host/host-supervision.ts";
import { workerEntry } from "../../src/os/self-launch.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import { closeStateStore } from "../../src/state/store.ts";
import { queryOne } from "../../src/state/statements.ts";
import { benchHostContext, enqueueResolved } from "./_host-context.ts";
import { bareNode, bySize, percentile, round } from "./_figures.ts";
import { benchBundle } from "./_bundle.ts";

const cli = parseArgs({
  args: process.argv.slice(2),
  options: { binary: { type: "string" }, smoke: { type: "boolean" } },
  allowPositionals: true,
});
const RUNS = Number(cli.positionals[0] ?? bySize(15, 1));
/** Warm-ups steady the figures; the smoke's figures are not read, so it runs none. */
const WARMUPS = bySize(2, 0);

const root = mkdtempSync(join(tmpdir(), "piw-bench-spawn-"));
const stateDir = join(root, "state");
const project = join(root, "project");
mkdirSync(project, { recursive: true });
const workflowPath = join(project, "one.workflow.ts");
writeFileSync(
  workflowPath,
  `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({ name: "one", startAt: "a", nodes: { a: compute({ run: () => 1 }) }, edges: [] });
`,
);
const repo = fileURLToPath(new URL("../..", import.meta.url));
// The npm package's bundle, made by the same code as `npm run compile` (its plugins defer
// built-ins the start-up path does not need), written into the temp dir (the smoke run's shared
// one under --smoke: _bundle.ts).
// The host starts workers from the worker-only bundle written beside it (selfCommand).
const bundle = workerEntry(await benchBundle(join(root, "bundle", "pi-workflows.mjs")));

const ctx = benchHostContext(stateDir, 15_000);
const store = ctx.store;
const env = { PI_CODING_AGENT_DIR: join(root, "agent") };
const source = createSupervision(ctx, { childEnv: env });
const bundled = createSupervision(ctx, {
  childEnv: env,
  workerCommand: (args) => ({ command: process.execPath, args: [bundle, ...args] }),
});
const binaryPath = cli.values.binary ?? join(repo, "dist", "pi-workflows");
const binary = existsSync(binaryPath)
  ? createSupervision(ctx, {
    childEnv: env,
    workerCommand: (args) => ({ command: binaryPath, args }),
  })
  : null;

try {
  const resolved = await source.resolve({ workflow: workflowPath, input: {}, cwd: project });
  if (!resolved.ok) throw new Error(`Resolve failed: ${resolved.message}`);
  source.start();
  bundled.start();
  binary?.start();

  /**
   * Launches one run with `supervision`; returns enqueue -> worker.ready and, of that, enqueue
   * -> the launch claim's commit time (the scheduler and the claim, before the spawn), in ms.
   */
  const readyOnce = async (
    supervision: typeof source,
  ): Promise<{ ready: number; claim: number }> => {
    const { runId } = enqueueResolved(store, resolved, {
      projectPath: project,
    });
    const enqueuedAt = Date.now();
    supervision.wake();
    const row = () =>
      queryOne<{ ready_at: number | null; started_at: number | null; state: string }>(
        store,
        "SELECT w.ready_at, w.started_at, r.state FROM runs r " +
          "LEFT JOIN run_workers w ON w.run_id = r.run_id WHERE r.run_id = :runId",
        { runId },
      );
    if (!await waitUntil(() => row()?.ready_at != null, 30_000)) throw new Error("No ready");
    const readyMs = row()!.ready_at! - enqueuedAt;
    const claimMs = row()!.started_at! - enqueuedAt;
    const done = await waitUntil(
      () => row()?.state === "completed" && supervision.activeWorkerCount() === 0,
      30_000,
    );
    if (!done) throw new Error("Run did not complete");
    return { ready: readyMs, claim: claimMs };
  };

  const ready: number[] = [];
  const readyBundled: number[] = [];
  const readyBinary: number[] = [];
  const bare: number[] = [];
  const claims: number[] = [];
  for (let i = 0; i < RUNS + WARMUPS; i++) {
    // Interleaved, so all three see the same machine load; the warm-ups first.
    const bareMs = await bareNode();
    const sourceMs = await readyOnce(source);
    const bundledMs = await readyOnce(bundled);
    const binaryMs = binary ? await readyOnce(binary) : null;
    if (i < WARMUPS) continue;
    bare.push(bareMs);
    ready.push(sourceMs.ready);
    readyBundled.push(bundledMs.ready);
    if (binaryMs !== null) readyBinary.push(binaryMs.ready);
    claims.push(sourceMs.claim, bundledMs.claim, ...(binaryMs ? [binaryMs.claim] : []));
  }
  const bareMedian = percentile(bare, 50);
  console.log(JSON.stringify({
    bench: "spawn",
    runs: RUNS,
    bare_node_median_ms: round(bareMedian),
    bare_node_p95_ms: round(percentile(bare, 95)),
    ready_median_ms: round(percentile(ready, 50)),
    ready_p95_ms: round(percentile(ready, 95)),
    ratio: Math.round((percentile(ready, 50) / bareMedian) * 100) / 100,
    // Of every variant's ready time: the scheduler and the launch claim, before the spawn.
    claim_median_ms: round(percentile(claims, 50)),
    bundled_ready_median_ms: round(percentile(readyBundled, 50)),
    bundled_ready_p95_ms: round(percentile(readyBundled, 95)),
    bundled_ratio: Math.round((percentile(readyBundled, 50) / bareMedian) * 100) / 100,
    ...(binary
      ? {
        binary: true,
        binary_ready_median_ms: round(percentile(readyBinary, 50)),
        binary_ready_p95_ms: round(percentile(readyBinary, 95)),
        binary_ratio: Math.round((percentile(readyBinary, 50) / bareMedian) * 100) / 100,
      }
      : { binary: null }),
  }));
} finally {
  await source.shutdown();
  await bundled.shutdown();
  await binary?.shutdown();
  closeStateStore(store);
  rmSync(root, { recursive: true, force: true });
}

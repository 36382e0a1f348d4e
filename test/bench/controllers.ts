/**
 * `npm run bench -- controllers`: 1,000 resources of one controller applied and reconciled to
 * settled, each reconcile ensuring one cheap managed effect, through the real supervision, a real
 * controller worker process and the real controller resolver child. Prints, beside the raw
 * single-row commit rate measured in the same run (`raw_tx_per_s`):
 *
 *   applies_per_s      `controller.apply`'s work per resource: the warm resolver child computes
 *                      `initialStatus(spec)`, the host re-checks the source and commits
 *   reconciles_per_s   from starting the scheduler (all 1,000 due) to the last one settled;
 *                      each reconcile is a claim (batched), `effect.reserve` and
 *                      `reconcile.finished` carrying the effect's settle (docs/controllers.md)
 *   commits_per_reconcile  write transactions the host committed during that phase, per reconcile
 *   statements_per_reconcile  SQL statements the host ran inside its write transactions in that
 *                      phase (COMMITs included), per reconcile: does not depend on the load
 *   host_cpu_ms_per_reconcile  the host's CPU time (user + system) in that phase, per reconcile:
 *                      less at the mercy of the machine's load than the rates. The phase starts
 *                      after a full garbage collection: the applies' garbage is not billed to it
 *   allocated_kb_per_reconcile  the host's JS heap allocation in that phase, per reconcile (null
 *                      on a runtime that does not count it): does not depend on the load
 *   young_generation_mb, scavenges, mark_compacts, gc_ms_per_reconcile  V8's young generation
 *                      when the phase began and the collections in it (_heap-window.ts): the
 *                      CPU figure is only comparable between runs that began at the same size
 *   raw_tx_per_s       the raw rate before the reconciles; `raw_after_tx_per_s` right after them
 *   ratio              reconciles_per_s / the mean of both raw rates (target: at least 0.1)
 *   first_reconcile_ms the fixed part: spawning the controller worker and loading the controller
 *
 *   npm run bench -- controllers [resources=1000] [concurrency=the host default, 32]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JsonValue } from "../../src/protocol/canonical-json.ts";
import { createSupervision, type SupervisionContext } from "../../src/host/host-supervision.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import { closeStateStore } from "../../src/state/store.ts";
import { queryOne } from "../../src/state/statements.ts";
import { applyResource } from "../../src/state/controllers/resources.ts";
import { DEFAULT_CONTROLLER_OPTIONS } from "../../src/host/controllers/options.ts";
import { benchHostContext } from "./_host-context.ts";
import { rawCommitRate } from "./_raw-commits.ts";
import { benchArgs, bySize, collectGarbage, RAW_COMMIT_MS } from "./_figures.ts";
import { heapWindow } from "./_heap-window.ts";

const RESOURCES = Number(benchArgs[0] ?? bySize(1000, 20));
const CONCURRENCY = Number(
  benchArgs[1] ?? DEFAULT_CONTROLLER_OPTIONS.maxConcurrentReconciles,
);
const root = mkdtempSync(join(tmpdir(), "piw-bench-controllers-"));
const project = join(root, "project");
mkdirSync(join(project, ".pi", "controllers"), { recursive: true });
writeFileSync(
  join(project, ".pi", "controllers", "bench.controller.ts"),
  `import { defineController } from "pi-workflows";
export default defineController({
  name: "bench",
  initialStatus: (spec) => ({ n: spec.n, done: false }),
  async reconcile(ctx, resource) {
    const effect = await ctx.effects.ensure({
      key: "mark-" + resource.spec.n,
      kind: "bench.mark",
      request: { n: resource.spec.n },
      idempotent: true,
      apply: () => ({ marked: resource.spec.n }),
    });
    return ctx.settled({ controllerStatus: { n: resource.spec.n, done: effect.state === "applied" } });
  },
});
`,
);

const ctx: SupervisionContext = benchHostContext(join(root, "state"), 30_000);
ctx.controllerOptions = {
  maxConcurrentReconciles: CONCURRENCY,
  workerIdleMs: 60_000,
  resolverIdleMs: 60_000,
  backoffBaseMs: 1_000,
  backoffMaxMs: 60_000,
};
const store = ctx.store;
const supervision = createSupervision(ctx, {
  childEnv: { PI_CODING_AGENT_DIR: join(root, "agent") },
});

const settledCount = () =>
  queryOne<{ n: number }>(
    store,
    "SELECT COUNT(*) AS n FROM controller_queue WHERE pending = 0 AND claim_version IS NULL",
  )!.n;

try {
  const raw = rawCommitRate(root, RAW_COMMIT_MS);
  const applyStart = performance.now();
  for (let n = 0; n < RESOURCES; n++) {
    const spec: JsonValue = { n };
    const resolved = await supervision.controllers.resolve({
      controller: "bench",
      cwd: project,
      spec,
    });
    if (!resolved.ok) throw new Error(`Resolve failed: ${resolved.message}`);
    applyResource(store, {
      controller: {
        projectPath: project,
        name: resolved.name,
        sourceRef: resolved.sourceRef,
        source: resolved.source as unknown as JsonValue,
        sourceDigest: resolved.sourceDigest,
        timeoutMs: resolved.timeoutMs,
      },
      key: `r${n}`,
      spec,
      initialStatus: resolved.initialStatus,
    });
  }
  const applySeconds = (performance.now() - applyStart) / 1000;
  let commits = 0;
  let statements = 0;
  store.beforeStatement = (sql) => {
    statements++;
    if (sql === "COMMIT") commits++;
  };
  // The applies' garbage is theirs: collected before the reconciles' CPU is counted.
  collectGarbage();
  const heap = heapWindow();
  const started = performance.now();
  const cpuStart = process.cpuUsage();
  supervision.start();
  await waitUntil(() => settledCount() > 0, 60_000);
  const first = performance.now();
  const done = await waitUntil(() => settledCount() === RESOURCES, 600_000);
  if (!done) throw new Error(`Only ${settledCount()} of ${RESOURCES} settled`);
  const ended = performance.now();
  const cpu = process.cpuUsage(cpuStart);
  const gc = heap.end();
  store.beforeStatement = null;
  const reconcileCommits = commits;
  const reconcileStatements = statements;
  // The disk is shared: a second baseline right after the run, so one burst of someone else's
  // writes does not decide the ratio alone.
  const rawAfter = rawCommitRate(root, RAW_COMMIT_MS);
  const seconds = (ended - started) / 1000;
  const rate = RESOURCES / seconds;
  const baseline = (raw + rawAfter) / 2;
  console.log(JSON.stringify({
    bench: "controllers",
    resources: RESOURCES,
    concurrency: CONCURRENCY,
    applies_per_s: Math.round(RESOURCES / applySeconds),
    seconds: Math.round(seconds * 100) / 100,
    reconciles_per_s: Math.round(rate),
    commits_per_reconcile: Math.round((reconcileCommits / RESOURCES) * 100) / 100,
    statements_per_reconcile: Math.round((reconcileStatements / RESOURCES) * 100) / 100,
    host_cpu_ms_per_reconcile: Math.round(((cpu.user + cpu.system) / 1000 / RESOURCES) * 1000) /
      1000,
    allocated_kb_per_reconcile: gc.allocatedBytes === null
      ? null
      : Math.round(gc.allocatedBytes / 1024 / RESOURCES * 10) / 10,
    young_generation_mb: gc.youngGenerationMb,
    scavenges: gc.scavenges,
    mark_compacts: gc.markCompacts,
    gc_ms_per_reconcile: Math.round((gc.gcPauseMs / RESOURCES) * 1000) / 1000,
    raw_tx_per_s: Math.round(raw),
    raw_after_tx_per_s: Math.round(rawAfter),
    ratio: Math.round((rate / baseline) * 1000) / 1000,
    first_reconcile_ms: Math.round(first - started),
    steady_reconciles_per_s: Math.round((RESOURCES - 1) / ((ended - first) / 1000)),
  }));
} finally {
  await supervision.shutdown();
  closeStateStore(store);
  rmSync(root, { recursive: true, force: true });
}

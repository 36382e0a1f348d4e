/**
 * In-process supervision over a real state file, with real worker child processes. Tests drive
 * `createSupervision` the way the host main does, and wait on durable state with deadlines.
 */
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type {
  HostContext,
  ResolveResult,
  SupervisionOptions,
} from "../../src/host/host-context.ts";
import {
  createSupervision,
  type Supervision,
  type SupervisionContext,
  type SupervisionExtras,
} from "../../src/host/host-supervision.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import type { ControllerOptions } from "../../src/host/controllers/options.ts";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { acquireHostClaim } from "../../src/state/host-claim.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { readRun, type RunView } from "../../src/state/queries.ts";
import { closeStateStore, openStateStore, type StateStore } from "../../src/state/store.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { resolvedRunFields } from "../../src/host/resolved-run.ts";
import { removeTempRoot } from "./temp-root.ts";
import { shareWorkerCompileCache } from "./worker-compile-cache.ts";

const here = dirname(fileURLToPath(import.meta.url));
export const WORKER_ENTRY = join(here, "fixtures", "worker-entry.ts");

/** Runs `worker [args]` through the test entry with the same Node as the test. */
export function testWorkerCommand(args: string[]) {
  const [mode, ...rest] = args;
  if (mode !== "worker") throw new Error(`Test entry runs worker modes only, got ${mode}`);
  return { command: process.execPath, args: [WORKER_ENTRY, ...rest] };
}

export const FAST_OPTIONS: SupervisionOptions = {
  maxConcurrentWorkers: 4,
  claimTtlMs: 3_000,
  claimRenewMs: 500,
  workerStartupMs: 10_000,
  killGraceMs: 300,
  maxCapturedOutputBytes: 256 * 1024,
  boundaryMs: 10_000,
  stopWaitMs: 5_000,
  maxConcurrentResolvers: 2,
  maxWorkerMemoryMb: 1024,
  maxWorkerLogsMb: 64,
};

export interface Harness {
  root: string;
  stateDir: string;
  projectDir: string;
  store: StateStore;
  ctx: HostContext;
  supervision: Supervision;
  logs: string[];
  /** Writes a workflow file into the project and returns its absolute path. */
  writeWorkflow(name: string, source: string): string;
  /** Resolves (real resolver child), enqueues and wakes; returns the run id. */
  startRun(workflow: string, input?: unknown): Promise<string>;
  /** Enqueues an already resolved workflow and wakes the scheduler. */
  enqueueResolved(resolved: ResolveResult): string;
  run(runId: string): RunView;
  /** Waits until the run satisfies `done` (deadline), then returns it. */
  waitForRun(runId: string, done: (run: RunView) => boolean, ms?: number): Promise<RunView>;
  invariants(): unknown[];
  /** Captured worker stdout/stderr, for failure messages. */
  workerLogs(): string;
  close(): Promise<void>;
}

/** How a harness's state directory starts. */
export interface HarnessFixture {
  /** A compile cache of the state directory's own, not the shared one (worker-compile-cache.ts). */
  ownCompileCache?: boolean;
}

export function createHarness(
  options: Partial<SupervisionOptions> = {},
  extras: SupervisionExtras = {},
  controllerOptions?: ControllerOptions,
  fixture: HarnessFixture = {},
): Promise<Harness> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "piw-worker-")));
  const stateDir = join(root, "state");
  if (!fixture.ownCompileCache) shareWorkerCompileCache(stateDir);
  const projectDir = join(root, "project");
  mkdirSync(projectDir, { recursive: true });
  const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds });
  const hostOwnerId = `host-test-${process.pid}`;
  const host = acquireHostClaim(store, {
    ownerId: hostOwnerId,
    token: "host-token",
    ttlMs: 60_000,
  });
  const logs: string[] = [];
  const ctx: SupervisionContext = {
    store,
    clock: systemClock,
    ids: randomIds,
    stateDir,
    hostEpoch: host.epoch,
    hostOwnerId,
    log: (event, fields) => logs.push(`${event} ${JSON.stringify(fields ?? {})}`),
    options: { ...FAST_OPTIONS, ...options },
    ...(controllerOptions ? { controllerOptions } : {}),
  };
  const supervision = createSupervision(ctx, {
    workerCommand: testWorkerCommand,
    ...extras,
    childEnv: (runId) => ({
      PI_CODING_AGENT_DIR: join(root, "agent"),
      ...(typeof extras.childEnv === "function" ? extras.childEnv(runId) : extras.childEnv),
    }),
  });
  const harness: Harness = {
    root,
    stateDir,
    projectDir,
    store,
    ctx,
    supervision,
    logs,
    writeWorkflow(name, source) {
      const path = join(projectDir, name);
      writeFileSync(path, source);
      return path;
    },
    async startRun(workflow, input = {}) {
      const resolved = await supervision.resolve({ workflow, input, cwd: projectDir });
      return harness.enqueueResolved(resolved);
    },
    enqueueResolved(resolved) {
      if (!resolved.ok) {
        throw new Error(
          `Resolve failed: ${resolved.code}: ${resolved.message}\n${harness.workerLogs()}`,
        );
      }
      const { runId } = enqueueRun(store, {
        ...resolvedRunFields(resolved, projectDir),
        binding: { executionMode: "headless" },
      });
      supervision.wake();
      return runId;
    },
    run(runId) {
      const run = readRun(store, runId);
      if (!run) throw new Error(`No run ${runId}`);
      return run;
    },
    async waitForRun(runId, done, ms = 30_000) {
      let last: RunView | undefined;
      const ok = await waitUntil(() => {
        last = readRun(store, runId);
        return last !== undefined && done(last);
      }, ms);
      if (!ok) {
        throw new Error(
          `Run ${runId} did not reach the expected state in ${ms} ms: ` +
            `${last?.state}/${last?.queueState} ${JSON.stringify(last?.error)}\n${
              logs.join("\n")
            }\n${harness.workerLogs()}`,
        );
      }
      return last!;
    },
    workerLogs() {
      const dir = join(stateDir, "workers");
      let names: string[] = [];
      try {
        names = readdirSync(dir);
      } catch {
        return "(no worker logs)";
      }
      return names.map((n) => `--- ${n}\n${readFileSync(join(dir, n), "utf8").slice(-4000)}`)
        .join("\n");
    },
    invariants() {
      return checkInvariants(store);
    },
    async close() {
      await supervision.shutdown();
      closeStateStore(store);
      await removeTempRoot(root);
    },
  };
  supervision.start();
  return Promise.resolve(harness);
}

export const isTerminal = (run: RunView) =>
  ["completed", "failed", "timed_out", "cancelled"].includes(run.state);

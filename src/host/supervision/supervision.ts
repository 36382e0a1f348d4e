/**
 * The host's back half: the run workers (run-workers.ts: scheduler, epochs, deadlines, limits,
 * claim renewal), recovery, validations, prepared processes, controllers, the source resolver
 * and the compile cache warm-up, every child spawned and retired by the kit in children/.
 * Everything here runs in the host event loop and does only short SQLite transactions, timers
 * and process bookkeeping; workflow code runs in workers.
 *
 * A worker's life in memory (launching, live, kept, stopping, gone, and the claim it holds) is
 * one typed state changed only by worker-life.ts; `run_workers` holds the durable record.
 */
import { listExpiredRuns } from "../../state/queries.ts";
import { nextLaunchableRuns } from "../../state/transitions/run-launch.ts";
import { listValidatingSubmissions } from "../../state/interaction-queries.ts";
import { selfCommand } from "../../os/self-launch.ts";
import { logError } from "../host-log.ts";
import type { HostContext, Supervision } from "./api.ts";
import { createProcessRegistry } from "./process-registry.ts";
import { recoverAtStart } from "./recovery.ts";
import { createResolvers } from "./resolver.ts";
import { createValidations } from "./validation.ts";
import { createPreparedChildren } from "./prepared-children.ts";
import { createCompileCacheWarmup } from "./compile-cache-warmup.ts";
import { createLogPruner } from "./captured-logs.ts";
import { createControllerSupervision } from "./controllers/scheduler.ts";
import { createRunWorkers } from "./run-workers.ts";

export interface SupervisionExtras {
  /**
   * Extra environment for workers (per run when a function) and resolvers (tests: crash
   * points). Never secrets.
   */
  childEnv?: NodeJS.ProcessEnv | ((runId: string | null) => NodeJS.ProcessEnv);
  /** Crash-like exits in a row before the run fails (default 3). */
  maxCrashes?: number;
  /** The command for `worker [args]` children; default `selfCommand` (this same program). */
  workerCommand?: (args: string[]) => { command: string; args: string[] };
  /** Bound of the compile cache warm-up (compile-cache-warmup.ts); tests shorten it. */
  warmupTimeoutMs?: number;
}

export function createSupervision(ctx: HostContext, extras: SupervisionExtras = {}): Supervision {
  const registry = createProcessRegistry({
    store: ctx.store,
    onWriteFailed: (error) => ctx.log("registry.write_failed", { error: logError(error) }),
  });
  let started = false;
  let shuttingDown = false;

  const envFor = (runId: string | null): NodeJS.ProcessEnv =>
    typeof extras.childEnv === "function" ? extras.childEnv(runId) : extras.childEnv ?? {};
  const command = extras.workerCommand;
  const resolvers = createResolvers(ctx, {
    env: envFor(null),
    command,
    registry,
    stopping: () => shuttingDown,
  });
  const prepared = createPreparedChildren(ctx, { registry });
  const warmup = createCompileCacheWarmup(ctx, extras, envFor(null));
  const workers = createRunWorkers(ctx, {
    registry,
    prepared,
    env: envFor,
    command,
    ...(extras.maxCrashes !== undefined ? { maxCrashes: extras.maxCrashes } : {}),
    pruneLogs: (worker) => pruneLogs(worker),
    // A controller child run may have ended: its parent resource is due.
    ended: () => controllers.wake(),
  });
  const { active } = workers;
  const pruneLogs = createLogPruner(ctx, {
    workers: active,
    resolvers: resolvers.liveLogs,
    prepared: () => prepared.logFiles(),
  });
  const validations = createValidations(ctx, {
    registry,
    env: envFor,
    command,
    accepted: () => workers.schedule(),
    launchAccepted: (runId, child, accept) => workers.launchAccepted(runId, child, accept),
    prepared,
    // The run's worker committed the request and is about to say goodbye: its process may be
    // kept, so a submission that fast waits for that (bounded by the worker's own exit).
    epochEnding: (runId) => workers.epochEnding(runId),
  });
  const controllers = createControllerSupervision(ctx, {
    command: command ?? selfCommand,
    env: envFor(null),
    registry,
    resolveWorkflow: (request) => supervision.resolve(request),
    wakeRuns: () => workers.schedule(),
    ...(ctx.controllerOptions ? { options: ctx.controllerOptions } : {}),
  });

  const supervision: Supervision = {
    controllers,
    async recover() {
      pruneLogs();
      await recoverAtStart(ctx);
      await controllers.recover();
    },
    start() {
      if (started) return;
      started = true;
      controllers.start();
      workers.start();
      // Recovery step 9: submissions a previous host left validating get a new child.
      for (const submissionId of listValidatingSubmissions(ctx.store)) {
        void validations.validate(submissionId);
      }
    },
    warmCompileCache() {
      // Runs to launch now: their workers fill the cache themselves.
      if (started && !shuttingDown) warmup.start(supervision.hasPendingWork());
    },
    validateSubmission: (submissionId) => validations.validate(submissionId),
    wake() {
      workers.schedule();
      controllers.wake();
    },
    claimOf: (runId) => workers.claimOf(runId),
    async stopRun(runId, reason) {
      // A cancelled run's submission was rejected with it; its validation child and prepared
      // process have no use.
      if (reason === "cancelled") {
        await validations.stopRun(runId);
        await prepared.stopRun(runId);
      }
      await workers.stopRun(runId, reason);
    },
    supplyCredentials: (runId, supplied) => workers.credentials.supply(runId, supplied),
    resolve: (request) => resolvers.resolve(request),
    activeWorkerCount: () => active.size + controllers.activeWorkerCount(),
    hasPendingWork() {
      if (
        active.size > 0 || resolvers.pending() > 0 || validations.count() > 0 ||
        controllers.hasPendingWork()
      ) return true;
      if (shuttingDown) return false;
      if (nextLaunchableRuns(ctx.store, 1).length > 0) return true;
      // Running rows no worker of ours holds: their claims expire and recovery relaunches them.
      return listExpiredRuns(ctx.store, Number.MAX_SAFE_INTEGER).length > 0;
    },
    async shutdown() {
      shuttingDown = true;
      await workers.shutdown();
      await validations.shutdown();
      await prepared.shutdown();
      await controllers.shutdown();
      await warmup.stop();
      await registry.stopAll(ctx.options.killGraceMs);
    },
  };
  return supervision;
}

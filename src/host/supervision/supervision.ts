/**
 * The process supervision: the run workers (run-workers.ts: scheduler, epochs, deadlines,
 * limits, claim renewal), recovery, validations, prepared processes, the source resolvers, the
 * controller worker and resolver processes the controller scheduler asks for, and the compile
 * cache warm-up, every child spawned and retired by the kit in children/.
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
import type { HostContext, ResolveRequest, ResolveResult } from "./api.ts";
import type { Claim } from "../../state/claims.ts";
import type { RunEnvironment } from "../../protocol/run-environment.ts";
import { createProcessRegistry } from "./process-registry.ts";
import { recoverAtStart } from "./recovery.ts";
import { createResolvers } from "./resolver.ts";
import { createValidations } from "./validation.ts";
import { createPreparedChildren } from "./prepared-children.ts";
import { createCompileCacheWarmup } from "./compile-cache-warmup.ts";
import { createLogPruner } from "./captured-logs.ts";
import {
  type ControllerChildren,
  createControllerChildren,
} from "./controllers/controller-children.ts";
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

export interface ProcessSupervision {
  /** Runs the spec's recovery steps 2-10, in order, before commands are accepted. */
  recover(): Promise<void>;
  /** Starts the run scheduler and renewal timers. */
  start(): void;
  /**
   * Once the host reported ready: warms a new compile cache in a background child that nothing
   * waits for (compile-cache-warmup.ts); `busy`: the host has work that fills the cache itself.
   */
  warmCompileCache(busy: boolean): void;
  /** A run became claimable (start, resume, a controller's child run): schedule promptly. */
  wake(): void;
  /**
   * This host's own claim of `runId` (held for its live worker), or null: pause and cancel
   * release exactly this claim (owner, token hash, generation, epoch), never a lookalike.
   */
  claimOf(runId: string): Claim | null;
  /**
   * Stops the fenced worker group of a run whose claim the caller has already released in the
   * same transaction as its command receipt (pause, cancel). Resolves once the group is gone.
   */
  stopRun(runId: string, reason: "paused" | "cancelled"): Promise<void>;
  /**
   * Starts (or joins) the supervised validation child of a `validating` interactive submission;
   * resolves once its verdict is committed (or the host shuts down).
   */
  validateSubmission(submissionId: string): Promise<void>;
  /**
   * Holds provider credentials for a headless run's Pi children, in memory only (a start or a
   * resume supplies them; run-credentials.ts).
   */
  supplyCredentials(runId: string, credentials: RunEnvironment): void;
  /** Validates a workflow reference and input in a supervised source-resolver child. */
  resolve(request: ResolveRequest): Promise<ResolveResult>;
  /** Controller worker and resolver processes, for the controller scheduler. */
  readonly controllerChildren: ControllerChildren;
  /** Run workers alive. */
  activeWorkerCount(): number;
  /** True while a worker, resolver, scheduled wake or unsettled work keeps the host alive. */
  hasPendingWork(): boolean;
  /**
   * Stops scheduling, parks live runs at their last durable boundary, stops the validation
   * children and prepared processes, then runs `beforeLastChildren` (the controller scheduler's
   * shutdown), then stops the warm-up and every child still registered.
   */
  shutdown(beforeLastChildren?: () => Promise<void>): Promise<void>;
}

export function createProcessSupervision(
  ctx: HostContext,
  extras: SupervisionExtras,
  links: {
    /** A run's epoch ended (a controller child run may have ended with it). */
    runEnded(): void;
  },
): ProcessSupervision {
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
    ended: links.runEnded,
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
  return {
    controllerChildren: createControllerChildren(ctx, {
      command: command ?? selfCommand,
      env: envFor(null),
      registry,
    }),
    async recover() {
      pruneLogs();
      await recoverAtStart(ctx);
    },
    start() {
      if (started) return;
      started = true;
      workers.start();
      // Recovery step 9: submissions a previous host left validating get a new child.
      for (const submissionId of listValidatingSubmissions(ctx.store)) {
        void validations.validate(submissionId);
      }
    },
    warmCompileCache(busy) {
      if (started && !shuttingDown) warmup.start(busy);
    },
    validateSubmission: (submissionId) => validations.validate(submissionId),
    wake: () => workers.schedule(),
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
    activeWorkerCount: () => active.size,
    hasPendingWork() {
      if (active.size > 0 || resolvers.pending() > 0 || validations.count() > 0) return true;
      if (shuttingDown) return false;
      if (nextLaunchableRuns(ctx.store, 1).length > 0) return true;
      // Running rows no worker of ours holds: their claims expire and recovery relaunches them.
      return listExpiredRuns(ctx.store, Number.MAX_SAFE_INTEGER).length > 0;
    },
    async shutdown(beforeLastChildren) {
      shuttingDown = true;
      await workers.shutdown();
      await validations.shutdown();
      await prepared.shutdown();
      await beforeLastChildren?.();
      await warmup.stop();
      await registry.stopAll(ctx.options.killGraceMs);
    },
  };
}

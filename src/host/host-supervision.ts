/**
 * The host's back half, joined: the process supervision (supervision/: every child spawned,
 * fenced and retired by its kit: run workers, validation children, prepared processes, source
 * resolvers, controller workers and resolvers, the compile cache warm-up; start-up recovery),
 * the run scheduling (runs/: when a run's worker launches, and what its deadlines, limits, claim
 * and end mean for the run) and the controller scheduling (controllers/: when a resource
 * reconciles). The host main creates one `Supervision` after it holds the host epoch and before
 * it accepts commands; the front half (lifecycle, socket, commands) sees only this seam.
 *
 * Everything here runs in the host event loop and does only short SQLite transactions, timers
 * and process bookkeeping; workflow and controller code runs in children.
 */
import type { Claim } from "../state/claims.ts";
import { listExpiredRuns } from "../state/queries.ts";
import { nextLaunchableRuns } from "../state/transitions/run-launch.ts";
import { listValidatingSubmissions } from "../state/interaction-queries.ts";
import type { RunEnvironment } from "../protocol/run-environment.ts";
import { selfCommand } from "../os/self-launch.ts";
import { logError } from "./host-log.ts";
import { reusingResolutions } from "./resolution-cache.ts";
import type { HostContext, ResolveRequest, ResolveResult } from "./host-context.ts";
import { createProcessRegistry } from "./supervision/process-registry.ts";
import { recoverAtStart } from "./supervision/recovery.ts";
import { createResolvers } from "./supervision/resolver.ts";
import { createValidations } from "./supervision/validation.ts";
import { createPreparedChildren } from "./supervision/prepared-children.ts";
import { createCompileCacheWarmup } from "./supervision/compile-cache-warmup.ts";
import { pruneLogs } from "./worker-log-budget.ts";
import { createRunWorkers } from "./runs/run-workers.ts";
import { recoverExpiredRuns } from "./runs/run-recovery.ts";
import type { ControllerSupervision } from "./controllers/api.ts";
import type { ControllerOptions } from "./controllers/options.ts";
import type { HeldSubmission } from "./held-submission.ts";
import { createControllerSupervision } from "./controllers/scheduler.ts";

export interface SupervisionContext extends HostContext {
  /** Controller tunables (controllers/options.ts); the defaults when absent. */
  controllerOptions?: ControllerOptions;
}

export interface SupervisionExtras {
  /**
   * Extra environment for workers (per run when a function) and resolvers (tests: crash
   * points). Never secrets.
   */
  childEnv?: NodeJS.ProcessEnv | ((runId: string | null) => NodeJS.ProcessEnv);
  /** Crash-like exits in a row before the run fails (default 3). */
  maxCrashes?: number;
  /** How long a settled run's worker may take to leave (default 30 s, worker-deadlines.ts). */
  leaveMs?: number;
  /** The command for `worker [args]` children; default `selfCommand` (this same program). */
  workerCommand?: (args: string[]) => { command: string; args: string[] };
  /** Bound of the compile cache warm-up (compile-cache-warmup.ts); tests shorten it. */
  warmupTimeoutMs?: number;
  /**
   * Reuse a start's resolution for the same start while its source is unchanged
   * (resolution-cache.ts): the test kit, whose crash runs repeat one start. Off by default.
   */
  reuseResolutions?: boolean;
}

export interface Supervision {
  /**
   * Runs the spec's recovery steps 2-10, in order, before commands are accepted: step 2 reaps
   * (supervision/recovery.ts), steps 3-6 recover runs (runs/run-recovery.ts), step 7's
   * controller work recovers in controllers/recovery.ts; pending interactive requests need
   * nothing (rows; no worker waits with them), the host main applies due deadlines before
   * commands arrive (step 8), `start()` re-runs leftover `validating` submissions (step 9), and
   * no model turn starts until a session asks (step 10).
   */
  recover(): Promise<void>;
  /** Starts the run and controller schedulers and the renewal timers. */
  start(): void;
  /**
   * Once the host reported ready: warms a new compile cache in a background child that nothing
   * waits for (supervision/compile-cache-warmup.ts).
   */
  warmCompileCache(): void;
  /** Called after a command made a run or a resource due (start, resume, apply): schedule. */
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
   * Validates the submission in the run's idle prepared process now, or declines (null): the one
   * rule is validation.ts's `validateNow`. Called inside the transaction that writes the
   * submission (the request leaves before anything else happens); `held` when that transaction
   * is rolled back and the submission recorded with its verdict (held-submission.ts).
   */
  validateNow(submissionId: string, held?: HeldSubmission): Promise<void> | null;
  /** Resolves once the run's epoch said goodbye, when it has yet to (validation.ts). */
  goodbyeOf(runId: string): Promise<unknown> | null;
  /**
   * Holds provider credentials for a headless run's Pi children, in memory only (a start or a
   * resume supplies them; run-credentials.ts).
   */
  supplyCredentials(runId: string, credentials: RunEnvironment): void;
  /** Validates a workflow reference and input in a supervised source-resolver child. */
  resolve(request: ResolveRequest): Promise<ResolveResult>;
  /** Controllers: resolver, scheduler and workers (controllers/scheduler.ts). */
  readonly controllers: ControllerSupervision;
  activeWorkerCount(): number;
  /** True while a worker, resolver, scheduled wake or unsettled work keeps the host alive. */
  hasPendingWork(): boolean;
  /** True while work is in hand: a worker, a resolver or validation child, a run to launch now. */
  hasWorkNow(): boolean;
  /** Stops scheduling, parks live runs at their last durable boundary, stops all groups. */
  shutdown(): Promise<void>;
}

export function createSupervision(
  ctx: SupervisionContext,
  extras: SupervisionExtras = {},
): Supervision {
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
  const reusing = extras.reuseResolutions
    ? reusingResolutions((request) => resolvers.resolve(request))
    : null;
  // A stopping host refuses starts (the resolvers' answer), kept answers included.
  const resolve = (request: ResolveRequest) =>
    reusing && !shuttingDown ? reusing(request) : resolvers.resolve(request);
  const prepared = createPreparedChildren(ctx);
  const warmup = createCompileCacheWarmup(ctx, extras, envFor(null));
  const workers = createRunWorkers(ctx, {
    registry,
    prepared,
    env: envFor,
    command,
    ...(extras.maxCrashes !== undefined ? { maxCrashes: extras.maxCrashes } : {}),
    ...(extras.leaveMs !== undefined ? { leaveMs: extras.leaveMs } : {}),
    // A controller child run may have ended: its parent resource is due.
    ended: () => controllers.wake(),
  });
  const { active } = workers;
  const validations = createValidations(ctx, {
    registry,
    env: envFor,
    command,
    accepted: () => workers.schedule(),
    launchAccepted: (runId, child, accept, ahead) =>
      workers.launchAccepted(runId, child, accept, ahead),
    prepared,
    // The run's worker committed the request and is about to say goodbye: its process may be
    // kept, so a submission that fast waits for that (bounded by the worker's own exit).
    epochEnding: (runId) => workers.epochEnding(runId),
    stopping: () => shuttingDown,
  });
  const controllers = createControllerSupervision(ctx, {
    children: { command: command ?? selfCommand, env: envFor(null), registry },
    resolveWorkflow: (request) => supervision.resolve(request),
    wakeRuns: () => workers.schedule(),
    ...(ctx.controllerOptions ? { options: ctx.controllerOptions } : {}),
  });

  const supervision: Supervision = {
    controllers,
    async recover() {
      pruneLogs(ctx);
      await recoverAtStart(ctx);
      recoverExpiredRuns(ctx, new Set());
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
    validateNow: (submissionId, held) => validations.validateNow(submissionId, held),
    goodbyeOf: (runId) => validations.goodbyeOf(runId),
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
    resolve,
    activeWorkerCount: () => active.size + controllers.activeWorkerCount(),
    hasPendingWork() {
      if (
        active.size > 0 || resolvers.pending() > 0 || validations.count() > 0 ||
        controllers.hasPendingWork()
      ) return true;
      return !shuttingDown && hasRunsToLaunch(ctx);
    },
    hasWorkNow: () =>
      active.size > 0 || controllers.activeWorkerCount() > 0 || resolvers.pending() > 0 ||
      validations.count() > 0 || (!shuttingDown && nextLaunchableRuns(ctx.store, 1).length > 0),
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

/** Runs to launch now, or whose claim will expire so that recovery relaunches them. */
function hasRunsToLaunch(ctx: HostContext): boolean {
  if (nextLaunchableRuns(ctx.store, 1).length > 0) return true;
  // Running rows no worker of ours holds: their claims expire and recovery relaunches them.
  return listExpiredRuns(ctx.store, Number.MAX_SAFE_INTEGER).length > 0;
}

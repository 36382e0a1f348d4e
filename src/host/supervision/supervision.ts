/**
 * The host's back half: the run scheduler and worker supervision, wiring in the host-enforced
 * deadlines (worker-deadlines.ts), claim renewal (claim-renewal.ts), recovery, validations,
 * prepared processes, controllers and the source resolver. Everything here runs in the host
 * event loop and does only short SQLite transactions, timers and process bookkeeping; workflow
 * code runs in workers.
 *
 * Worker states (in memory; `run_workers` holds the durable record):
 *   launching  claimRunForLaunch committed (running/starting), child spawned, envelope sent;
 *              the startup timer runs until `worker.ready`.
 *   live       `worker.ready` committed (running/running); each `node.started` arms the node's
 *              deadline timer (deadline + kill grace), each closed attempt disarms it.
 *   stopping   a stop reason is set and the group got SIGTERM (SIGKILL after the grace).
 *   gone       the child exited and its channel drained: worker-exit.ts records the epoch and
 *              settles the run; the scheduler then looks for more work.
 */
import { listExpiredRuns } from "../../state/queries.ts";
import { nextLaunchableRuns } from "../../state/transitions/run-launch.ts";
import { parkRun } from "../../state/transitions/run-park.ts";
import type { HostContext, Supervision } from "./api.ts";
import type { ActiveWorker, StopReason } from "./active-worker.ts";
import { identifyWorker, launchWorker, spawnFailure, WorkerSpawnError } from "./launch-worker.ts";
import { createProcessRegistry } from "./process-registry.ts";
import { recoverAtStart } from "./recovery.ts";
import { renewClaims } from "./claim-renewal.ts";
import { createWorkerDeadlines } from "./worker-deadlines.ts";
import { createResolvers } from "./resolver.ts";
import {
  type LimitReason,
  MEMORY_CHECK_MS,
  memoryLimitError,
  outputLimitError,
  recordLimitFailure,
  workersOverMemory,
} from "./worker-limits.ts";
import type { FactError } from "../../protocol/run-facts.ts";
import { createRunCredentials } from "./run-credentials.ts";
import { stopProcessGroup, waitUntil } from "../../os/stop-group.ts";
import { stopChildGroup } from "./children/retire-child.ts";
import { selfCommand } from "../../os/self-launch.ts";
import {
  createCrashCounter,
  DEFAULT_MAX_CRASHES,
  handleSpawnFailure,
  handleWorkerExit,
} from "./worker-exit.ts";
import { createValidations } from "./validation.ts";
import { createPreparedChildren, type PreparedChild } from "./prepared-children.ts";
import { createCompileCacheWarmup } from "./compile-cache-warmup.ts";
import { listValidatingSubmissions } from "../../state/interaction-queries.ts";
import { createLogPruner, settleWorkerOutput } from "./captured-logs.ts";
import { serveWorkerChannel } from "./worker-session.ts";
import { reapWorkerProcesses } from "./worker-teardown.ts";
import { createControllerSupervision } from "./controllers/scheduler.ts";
import { logError } from "../host-log.ts";

/** The epoch record of a process kept as its run's prepared child: a normal end. */
const KEPT_EXIT = { code: 0, signal: null };

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
  const active = new Map<string, ActiveWorker>();
  const registry = createProcessRegistry({
    store: ctx.store,
    onWriteFailed: (error) => ctx.log("registry.write_failed", { error: logError(error) }),
  });
  const crashes = createCrashCounter();
  const maxCrashes = extras.maxCrashes ?? DEFAULT_MAX_CRASHES;
  const stopping = new Map<ActiveWorker, Promise<void>>();
  const background = new Set<ReturnType<typeof setInterval>>();
  const credentials = createRunCredentials(ctx.store);
  let started = false;
  let shuttingDown = false;
  let tickQueued = false;

  const envFor = (runId: string | null): NodeJS.ProcessEnv =>
    typeof extras.childEnv === "function" ? extras.childEnv(runId) : extras.childEnv ?? {};
  const resolvers = createResolvers(ctx, {
    env: envFor(null),
    command: extras.workerCommand,
    registry,
    stopping: () => shuttingDown,
  });
  const prepared = createPreparedChildren(ctx, { registry });
  const warmup = createCompileCacheWarmup(ctx, extras, envFor(null));
  const validations = createValidations(ctx, {
    registry,
    env: envFor,
    command: extras.workerCommand,
    accepted: () => schedule(),
    prepared,
    // The run's worker committed the request and is about to say goodbye: its process may be
    // kept, so a submission that fast waits for that (bounded by the worker's own exit).
    epochEnding(runId) {
      const worker = active.get(runId);
      if (!worker || !worker.settled || worker.kept || worker.stopReason !== null) return null;
      const wait = prepared.offered(runId);
      return Promise.race([wait.kept, worker.done]).finally(() => wait.cancel());
    },
  });

  const stop = (worker: ActiveWorker, reason: StopReason, diagnostic: string): void => {
    if (worker.stopReason === null) {
      worker.stopReason = reason;
      worker.diagnostic ??= diagnostic;
    }
    if (stopping.has(worker)) return;
    // A worker stopped before its identity is read is stopped once it is (nothing when it died).
    const done = stopChildGroup(worker.spawned, { graceMs: ctx.options.killGraceMs }).then(
      (result) => {
        if (result === "stuck") ctx.log("worker.stop_stuck", { run: worker.runId });
      },
    );
    stopping.set(worker, done);
  };

  const deadlines = createWorkerDeadlines(ctx, { stop, crashes });
  const { arm } = deadlines;

  const hooks = {
    stop,
    onReady: deadlines.onReady,
    onAttemptStarted: deadlines.onAttemptStarted,
    onAttemptClosed: deadlines.onAttemptClosed,
    keepPrepared: (worker: ActiveWorker) => prepared.offer(worker),
    parkedAtBoundary(worker: ActiveWorker) {
      if (!shuttingDown) return false;
      try {
        parkRun(ctx.store, worker.claim, { reason: "hostShutdown" });
      } catch (error) {
        ctx.log("worker.park_failed", { run: worker.runId, error: logError(error) });
      }
      worker.claimReleased = true;
      stop(worker, "shutdown", "host shutdown at a boundary");
      return true;
    },
  };

  /** Records why on the open attempt (a node failure to route from), then stops the worker. */
  const limitExceeded = (worker: ActiveWorker, reason: LimitReason, error: FactError) => {
    if (worker.stopReason !== null) return;
    const { diagnostic, recorded } = recordLimitFailure(ctx, worker, error);
    if (recorded) {
      deadlines.clearAttemptDeadline(worker);
      crashes.reset(worker.runId);
    }
    ctx.log("worker.limit", { run: worker.runId, generation: worker.generation, limit: reason });
    stop(worker, reason, diagnostic);
  };
  let sampling = false;
  const checkMemory = async () => {
    // One sample at a time: a slow `ps` skips ticks instead of piling reads up.
    if (sampling) return;
    sampling = true;
    try {
      for (const { worker, bytes } of await workersOverMemory(ctx, active.values())) {
        limitExceeded(worker, "memoryExceeded", memoryLimitError(ctx, bytes));
      }
    } finally {
      sampling = false;
    }
  };

  const pruneLogs = createLogPruner(ctx, {
    workers: active,
    resolvers: resolvers.liveLogs,
    prepared: () => prepared.logFiles(),
  });

  const supervise = (worker: ActiveWorker) => {
    active.set(worker.runId, worker);
    arm(worker, ctx.options.workerStartupMs, () => {
      if (!worker.ready) {
        stop(worker, "startupTimedOut", "workerTimedOut: no worker.ready before the deadline");
      }
    });
    const served = identifyWorker(ctx, worker).catch((error) => {
      // The worker runs unrecorded: only a restarted host's reaping of it by its record is lost.
      ctx.log("worker.record_failed", { run: worker.runId, error: logError(error) });
    }).then(() => {
      const identity = worker.identity;
      if (identity) registry.register({ identity, kind: "worker", runId: worker.runId });
      return serveWorkerChannel(ctx, worker, hooks);
    });
    worker.done = served.then(async () => {
      // A kept process ended its epoch without exiting: the epoch is recorded as a normal exit.
      const exit = worker.kept ? KEPT_EXIT : await worker.spawned.exited;
      deadlines.forget(worker);
      // The leader is gone (or kept); nothing of its group, nor a child group it registered,
      // outlives the epoch.
      await reapWorkerProcesses(ctx, registry, worker);
      await stopping.get(worker);
      stopping.delete(worker);
      if (!worker.kept) await settleWorkerOutput(worker);
      pruneLogs(worker);
      try {
        handleWorkerExit(ctx, worker, exit, crashes, maxCrashes);
      } catch (error) {
        // Never leave the worker counted as active; the expired-claim sweep settles the run.
        ctx.log("worker.exit_failed", { run: worker.runId, error: logError(error) });
      }
      if (worker.kept) prepared.adopt(worker);
      active.delete(worker.runId);
      credentials.prune();
      schedule();
      // A controller child run may have ended: its parent resource is due.
      controllers.wake();
    });
  };

  const tick = () => {
    tickQueued = false;
    if (!started || shuttingDown) return;
    const capacity = ctx.options.maxConcurrentWorkers - active.size;
    if (capacity <= 0) return;
    let candidates;
    try {
      candidates = nextLaunchableRuns(ctx.store, capacity + active.size)
        .filter((run) => !active.has(run.runId))
        .slice(0, capacity);
    } catch (error) {
      ctx.log("scheduler.query_failed", { error: logError(error) });
      return;
    }
    for (const run of candidates) {
      let kept: PreparedChild | null = null;
      try {
        if (run.executionMode === "headless" && credentials.blockIfMissing(run.runId)) {
          ctx.log("run.blocked", { run: run.runId, reason: "credentialsMissing" });
          continue;
        }
        // The run's prepared process, when one waits (its workflow already loaded).
        kept = prepared.take(run.runId);
        supervise(
          launchWorker(ctx, run, {
            stop,
            credentials: credentials.forLaunch(run.runId),
            outputExceeded: (worker, stream) =>
              limitExceeded(worker, "outputExceeded", outputLimitError(ctx, stream)),
            env: envFor(run.runId),
            command: extras.workerCommand,
            prepared: kept?.spawned ?? null,
          }),
        );
      } catch (error) {
        // The claim was not taken: nothing runs in the taken process, which is stopped.
        if (kept) {
          const { identity } = kept;
          void stopProcessGroup(identity, { graceMs: ctx.options.killGraceMs }).then(() =>
            registry.unregister(identity)
          );
        }
        if (error instanceof WorkerSpawnError) {
          handleSpawnFailure(ctx, spawnFailure(run.runId, error), crashes, maxCrashes);
          schedule();
        } else ctx.log("worker.launch_failed", { run: run.runId, error: logError(error) });
      }
    }
  };

  const schedule = () => {
    if (tickQueued) return;
    tickQueued = true;
    setImmediate(tick);
  };

  const controllers = createControllerSupervision(ctx, {
    command: extras.workerCommand ?? selfCommand,
    env: envFor(null),
    registry,
    resolveWorkflow: (request) => supervision.resolve(request),
    wakeRuns: schedule,
    ...(ctx.controllerOptions ? { options: ctx.controllerOptions } : {}),
  });

  const renew = () =>
    renewClaims(ctx, active, { stop, shuttingDown: () => shuttingDown, schedule });

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
      const renewal = setInterval(renew, ctx.options.claimRenewMs);
      const memory = setInterval(() => void checkMemory(), MEMORY_CHECK_MS);
      memory.unref();
      background.add(memory);
      const sweep = setInterval(schedule, Math.max(250, ctx.options.claimRenewMs));
      background.add(renewal).add(sweep);
      // Recovery step 9: submissions a previous host left validating get a new child.
      for (const submissionId of listValidatingSubmissions(ctx.store)) {
        void validations.validate(submissionId);
      }
      schedule();
    },
    warmCompileCache() {
      // Runs to launch now: their workers fill the cache themselves.
      if (started && !shuttingDown) warmup.start(supervision.hasPendingWork());
    },
    validateSubmission(submissionId) {
      return validations.validate(submissionId);
    },
    wake() {
      schedule();
      controllers.wake();
    },
    claimOf(runId) {
      const worker = active.get(runId);
      return worker && !worker.claimReleased ? worker.claim : null;
    },
    async stopRun(runId, reason) {
      // A cancelled run's submission was rejected with it; its validation child and prepared
      // process have no use.
      if (reason === "cancelled") {
        await validations.stopRun(runId);
        await prepared.stopRun(runId);
      }
      const worker = active.get(runId);
      if (!worker) return;
      worker.claimReleased = true;
      stop(worker, reason, `${reason} by command`);
      await worker.done;
    },
    supplyCredentials(runId, supplied) {
      credentials.supply(runId, supplied);
    },
    resolve: (request) => resolvers.resolve(request),
    activeWorkerCount() {
      return active.size + controllers.activeWorkerCount();
    },
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
      // A planned stop avoids ambiguity where it can: an external node in flight gets a bounded
      // wait to reach its boundary (its next node.started parks the run instead of starting).
      // Claims keep being renewed meanwhile; pure work is parked after the wait (it can run
      // again).
      const waitUntilMs = Date.now() + ctx.options.stopWaitMs;
      await Promise.all(
        [...active.values()].map((worker) =>
          waitUntil(
            () =>
              worker.settled || worker.claimReleased || active.get(worker.runId) !== worker ||
              worker.openAttempt?.effect !== "external",
            Math.max(0, waitUntilMs - Date.now()),
          )
        ),
      );
      for (const timer of background) clearInterval(timer);
      background.clear();
      for (const worker of active.values()) {
        if (!worker.settled && !worker.claimReleased && worker.stopReason === null) {
          try {
            parkRun(ctx.store, worker.claim, { reason: "hostShutdown" });
          } catch (error) {
            // Lost or already settled: recovery of the next host handles whatever is left.
            ctx.log("worker.park_failed", { run: worker.runId, error: logError(error) });
          }
          worker.claimReleased = true;
        }
        stop(worker, "shutdown", "host shutdown");
      }
      await Promise.all([...active.values()].map((worker) => worker.done));
      await validations.shutdown();
      await prepared.shutdown();
      await controllers.shutdown();
      await warmup.stop();
      await registry.stopAll(ctx.options.killGraceMs);
    },
  };
  return supervision;
}

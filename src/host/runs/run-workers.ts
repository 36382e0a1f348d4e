/**
 * The run workers of one supervision: the scheduler that launches due runs, each epoch's
 * supervision (the process side: supervision/worker-epoch.ts, worker-stops.ts), the
 * host-enforced deadlines and limits, claim renewal, what a worker's end means for its run, and
 * the workers' part of a shutdown. host-supervision.ts joins this with the other children.
 */
import type { Claim } from "../../state/claims.ts";
import type { HostContext } from "../host-context.ts";
import type { ActiveWorker, StopReason } from "../supervision/active-worker.ts";
import { renewClaims } from "./claim-renewal.ts";
import { createWorkerDeadlines, LEAVE_MS } from "./worker-deadlines.ts";
import { createLimitWatch, outputLimitError } from "./worker-limits.ts";
import { MEMORY_CHECK_MS } from "../supervision/children/memory-limit.ts";
import { createCrashCounter, DEFAULT_MAX_CRASHES, handleWorkerExit } from "./worker-exit.ts";
import type { PreparedChild, PreparedChildren } from "../supervision/prepared-children.ts";
import { launchAccepted } from "./accepted-launch.ts";
import type { AheadStart } from "../worker-messages/speculative-start.ts";
import type { ProcessRegistry } from "../supervision/process-registry.ts";
import type { ChildCommand, ChildExit } from "../supervision/children/spawn-child.ts";
import { createRunCredentials, type RunCredentials } from "../run-credentials.ts";
import { stopWorker } from "../supervision/worker-stops.ts";
import { superviseWorker } from "../supervision/worker-epoch.ts";
import { launchDueRuns } from "./run-launches.ts";
import { failForReplyTooLarge } from "./reply-too-large.ts";
import { parkAndStopAll, parkAtBoundary, waitForExternalBoundaries } from "./worker-shutdown.ts";
import { awaitsGoodbye, holdsClaim, releaseClaim } from "../supervision/worker-life.ts";

export interface RunWorkerDeps {
  registry: ProcessRegistry;
  prepared: PreparedChildren;
  /** Extra environment of a run's worker (tests). */
  env(runId: string): NodeJS.ProcessEnv;
  command?: ChildCommand;
  maxCrashes?: number;
  /** The leave deadline of a settled run's worker (worker-deadlines.ts LEAVE_MS; tests). */
  leaveMs?: number;
  /** An epoch ended (a controller child run may have ended with it). */
  ended(): void;
}

export interface RunWorkers {
  readonly active: ReadonlyMap<string, ActiveWorker>;
  readonly credentials: RunCredentials;
  /** Starts the scheduler and its timers (renewal, memory samples, the sweep). */
  start(): void;
  /** Looks for due runs on the next turn of the event loop. */
  schedule(): void;
  claimOf(runId: string): Claim | null;
  /** Stops the run's worker, whose claim the caller released; resolves once its epoch ended. */
  stopRun(runId: string, reason: "paused" | "cancelled"): Promise<void>;
  /**
   * An accepted submission of the run, validated in `child`: its verdict and, when the
   * scheduler would launch the run now, the next epoch in `child`, in one commit
   * (accepted-launch.ts). Returns the epoch's supervision start, or null.
   */
  launchAccepted(
    runId: string,
    child: PreparedChild,
    accept: () => boolean,
    ahead?: AheadStart,
  ): (() => void) | null;
  /** The run's worker parked and is about to say goodbye: resolves once kept or gone. */
  epochEnding(runId: string): Promise<unknown> | null;
  /** Parks every live run at its last durable boundary and stops every worker. */
  shutdown(): Promise<void>;
}

export function createRunWorkers(ctx: HostContext, deps: RunWorkerDeps): RunWorkers {
  const active = new Map<string, ActiveWorker>();
  const crashes = createCrashCounter();
  const maxCrashes = deps.maxCrashes ?? DEFAULT_MAX_CRASHES;
  const credentials = createRunCredentials(ctx.store);
  const timers = new Set<ReturnType<typeof setInterval>>();
  const { prepared, registry } = deps;
  let started = false;
  let shuttingDown = false;
  let tickQueued = false;

  const stop = (worker: ActiveWorker, reason: StopReason, diagnostic: string) =>
    stopWorker(ctx, worker, reason, diagnostic);
  const deadlines = createWorkerDeadlines(ctx, {
    stop,
    crashes,
    leaveMs: deps.leaveMs ?? LEAVE_MS,
  });
  const limits = createLimitWatch(ctx, {
    workers: () => active.values(),
    stop,
    clearAttemptDeadline: deadlines.clearAttemptDeadline,
    crashes,
  });
  const epochs = {
    active,
    prepared,
    forgetDeadlines: deadlines.forget,
    settleExit: (worker: ActiveWorker, exit: ChildExit) =>
      handleWorkerExit(ctx, worker, exit, crashes, maxCrashes),
    hooks: {
      stop,
      onReady: deadlines.onReady,
      onAttemptStarted: deadlines.onAttemptStarted,
      onAttemptClosed: deadlines.onAttemptClosed,
      keepPrepared: (worker: ActiveWorker) => prepared.offer(worker),
      replyTooLarge: (worker: ActiveWorker) => failForReplyTooLarge(ctx, worker, stop),
      parkedAtBoundary: (worker: ActiveWorker) => shuttingDown && parkAtBoundary(ctx, worker, stop),
    },
    ended() {
      credentials.prune();
      schedule();
      deps.ended();
    },
  };
  const launches = {
    active,
    credentials,
    prepared,
    crashes,
    maxCrashes,
    hooks: (run: { runId: string }) => ({
      outputExceeded: (worker: ActiveWorker, stream: "stdout" | "stderr") =>
        limits.exceeded(worker, "outputExceeded", outputLimitError(ctx, stream)),
      env: deps.env(run.runId),
      command: deps.command,
      registry,
    }),
    supervise: (worker: ActiveWorker) => {
      superviseWorker(ctx, epochs, worker);
      deadlines.onSupervised(worker);
    },
    schedule: () => schedule(),
  };
  const schedule = () => {
    if (tickQueued) return;
    tickQueued = true;
    setImmediate(() => {
      tickQueued = false;
      if (started && !shuttingDown) launchDueRuns(ctx, launches);
    });
  };

  return {
    active,
    credentials,
    schedule,
    start() {
      started = true;
      const renew = () =>
        renewClaims(ctx, active, { stop, shuttingDown: () => shuttingDown, schedule });
      startTimers(ctx, timers, { renew, sampleMemory: limits.sampleMemory, schedule });
      schedule();
    },
    claimOf(runId) {
      const worker = active.get(runId);
      return worker && holdsClaim(worker) ? worker.claim : null;
    },
    async stopRun(runId, reason) {
      const worker = active.get(runId);
      if (!worker) return;
      releaseClaim(worker);
      stop(worker, reason, `${reason} by command`);
      await worker.done;
    },
    launchAccepted(runId, child, accept, ahead) {
      if (started && !shuttingDown) {
        return launchAccepted(ctx, launches, runId, child, accept, ahead);
      }
      accept();
      prepared.release(child, true);
      schedule();
      return null;
    },
    epochEnding(runId) {
      const worker = active.get(runId);
      if (!worker || !awaitsGoodbye(worker)) return null;
      const wait = prepared.offered(runId);
      return Promise.race([wait.kept, worker.done]).finally(() => wait.cancel());
    },
    async shutdown() {
      shuttingDown = true;
      // Claims keep being renewed while external nodes get their bounded wait.
      await waitForExternalBoundaries(ctx, active);
      for (const timer of timers) clearInterval(timer);
      timers.clear();
      await parkAndStopAll(ctx, active, stop);
    },
  };
}

/** The scheduler's timers: claim renewal, memory samples, the sweep for due runs. */
function startTimers(
  ctx: HostContext,
  timers: Set<ReturnType<typeof setInterval>>,
  tick: { renew(): void; sampleMemory(): Promise<void>; schedule(): void },
): void {
  const renewal = setInterval(tick.renew, ctx.options.claimRenewMs);
  const memory = setInterval(() => void tick.sampleMemory(), MEMORY_CHECK_MS);
  memory.unref();
  const sweep = setInterval(tick.schedule, Math.max(250, ctx.options.claimRenewMs));
  timers.add(renewal).add(memory).add(sweep);
}

/**
 * The controller scheduler and supervisor, in the host event loop (short SQLite transactions,
 * timers, process bookkeeping; controller code runs only in workers and resolvers):
 *
 *   due       one query finds resources due now (apply, delete, reconcile requests, child runs
 *             that ended, requeueAfter and backoff times that passed); one timer is armed for
 *             the earliest later one (`controller_queue.available_at`), so requeue times are
 *             durable and survive host restarts.
 *   claim     at most `maxConcurrentReconciles` reconciles at once; each holds the lease
 *             `reconcile:<uid>`, renewed by the host timer, and is pushed to its controller's
 *             worker (one worker per controller at its pinned digest, started on demand).
 *   deadline  at the reconcile deadline the host commits the requeue (with backoff) first, then
 *             aborts the reconcile; if the worker does not let go within the kill grace (code
 *             that ignores its signal or blocks the event loop), the worker's group is killed.
 *   exit      reconciles of a worker that died are interrupted (applying effects back to
 *             pending; a crash counts as an error, so a crashing controller backs off).
 */
import { renewClaim } from "../../../state/claims.ts";
import {
  blockController,
  finishControllerWorker,
  markControllerWorkerLive,
  readPinnedController,
} from "../../../state/controllers/controller-workers.ts";
import {
  hasChildRunsInFlight,
  hasPendingReconciles,
} from "../../../state/controllers/controller-queries.ts";
import {
  claimReconciles,
  listDueReconciles,
  nextForeignClaimExpiry,
  nextReconcileDue,
  type ReconcileClaim,
} from "../../../state/controllers/reconcile-claims.ts";
import { interruptReconcile, timeOutReconcile } from "../../../state/controllers/reconcile-end.ts";
import { ClaimLostError } from "../../../state/errors.ts";
import { writeFrame } from "../../../protocol/framing.ts";
import {
  CONTROLLER_PUSH_SCHEMA,
  type ControllerMessage,
  reconcileIdOf,
} from "../../../protocol/controller-worker.ts";
import type { HostContext, ResolveRequest, ResolveResult } from "../api.ts";
import type { ProcessRegistry } from "../process-registry.ts";
import { stopProcessGroup } from "../../../os/stop-group.ts";
import { closeAfterDrain, OUTPUT_DRAIN_MS, removeEmptyLogs } from "../worker-process.ts";
import { logError } from "../../host-log.ts";
import type { ControllerSupervision } from "./api.ts";
import {
  type ActiveReconcile,
  type ControllerWorker,
  type ControllerWorkerStop,
  launchControllerWorker,
} from "./controller-worker.ts";
import { serveControllerChannel } from "./controller-session.ts";
import {
  type ControllerOptions,
  DEFAULT_CONTROLLER_OPTIONS,
  reconcileBackoffMs,
} from "./options.ts";
import { applyReconcileMessage } from "./reconcile-handlers.ts";
import { recoverControllers, recoverExpiredReconciles } from "./recovery.ts";
import { createResolverPool } from "./resolver-pool.ts";

/** Timers wait this much past their time: one may fire a moment before the wall clock agrees. */
const TIMER_SLACK_MS = 5;
/** The due timer is re-armed at least this often, so a wall-clock jump is noticed. */
const MAX_TIMER_MS = 60_000;
/**
 * While a controller's child run is on its way, a backstop look this often: every run transition
 * the host makes wakes the scheduler already, this only covers one that forgot to.
 */
const CHILD_BACKSTOP_MS = 30_000;

export interface ControllerSupervisionDeps {
  command: (args: string[]) => { command: string; args: string[] };
  env: NodeJS.ProcessEnv;
  registry: ProcessRegistry;
  resolveWorkflow(request: ResolveRequest): Promise<ResolveResult>;
  /** The run scheduler: a child run was enqueued. */
  wakeRuns(): void;
  options?: ControllerOptions;
  random?: () => number;
}

export interface ControllerRuntime extends ControllerSupervision {
  /** Reaps controller workers an earlier host left and recovers expired reconcile claims. */
  recover(): Promise<void>;
  start(): void;
  /** Interrupts reconciles in flight (no error: they run again), stops workers and resolvers. */
  shutdown(): Promise<void>;
}

export function createControllerSupervision(
  ctx: HostContext,
  deps: ControllerSupervisionDeps,
): ControllerRuntime {
  const options = deps.options ?? DEFAULT_CONTROLLER_OPTIONS;
  const random = deps.random ?? Math.random;
  const workers = new Map<string, ControllerWorker>();
  const resolvers = createResolverPool(ctx, {
    command: deps.command,
    env: deps.env,
    registry: deps.registry,
    idleMs: options.resolverIdleMs,
  });
  // No timer runs while nothing is due or in flight: an idle host costs nothing here.
  let renewTimer: ReturnType<typeof setInterval> | null = null;
  let dueTimer: ReturnType<typeof setTimeout> | null = null;
  let started = false;
  let shuttingDown = false;
  let tickQueued = false;

  const retryDelayMs = (errors: number) => reconcileBackoffMs(errors, options, random);
  const inFlight = () => {
    let n = 0;
    for (const worker of workers.values()) n += worker.reconciles.size;
    return n;
  };
  const later = (
    timers: Set<ReturnType<typeof setTimeout>>,
    ms: number,
    fire: () => void,
  ) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fire();
    }, Math.max(0, ms));
    timers.add(timer);
  };
  const clearAll = (timers: Set<ReturnType<typeof setTimeout>>) => {
    for (const timer of timers) clearTimeout(timer);
    timers.clear();
  };
  const push = (worker: ControllerWorker, frame: Record<string, unknown>) =>
    writeFrame(worker.spawned.channel, { schema: CONTROLLER_PUSH_SCHEMA, ...frame }).catch(() => {
      // The worker is gone: its exit handling interrupts its reconciles.
    });

  const stopWorker = (worker: ControllerWorker, reason: ControllerWorkerStop) => {
    if (worker.stopReason !== null) return;
    worker.stopReason = reason;
    ctx.log("controller.worker_stop", { controller: worker.controllerName, reason });
    if (worker.identity) {
      void stopProcessGroup(worker.identity, {
        graceMs: ctx.options.killGraceMs,
        immediate: reason === "stuck",
      });
    }
  };

  /** The host renews reconcile claims from a timer only while it holds some. */
  const renewWhileHeld = () => {
    if (inFlight() > 0 && !shuttingDown) {
      renewTimer ??= setInterval(renew, ctx.options.claimRenewMs);
    } else if (renewTimer) {
      clearInterval(renewTimer);
      renewTimer = null;
    }
  };

  /** The worker no longer holds the reconcile (finished, or the worker is gone). */
  const release = (worker: ControllerWorker, reconcile: ActiveReconcile) => {
    reconcile.ended = true;
    clearAll(reconcile.timers);
    worker.reconciles.delete(reconcile.id);
    if (worker.reconciles.size === 0) idle(worker);
    renewWhileHeld();
    schedule();
  };

  /** The worker has nothing to do: a tick after the idle period stops it unless work came. */
  const idle = (worker: ControllerWorker) => {
    worker.idleSince = ctx.clock.now();
    later(worker.timers, options.workerIdleMs + TIMER_SLACK_MS, schedule);
  };

  const onDeadline = (worker: ControllerWorker, reconcile: ActiveReconcile) => {
    if (reconcile.ended) return;
    try {
      // Commit first: a later proposal of this reconcile meets a released claim.
      timeOutReconcile(ctx.store, reconcile.claim, {
        uid: reconcile.uid,
        timeoutMs: worker.timeoutMs,
        retryDelayMs: retryDelayMs(reconcile.consecutiveErrors + 1),
      });
    } catch (error) {
      if (!(error instanceof ClaimLostError)) {
        ctx.log("controller.deadline_failed", { error: logError(error) });
      }
    }
    reconcile.ended = true;
    ctx.log("controller.reconcile_timed_out", { controller: worker.controllerName });
    void push(worker, { kind: "reconcile.abort", reconcileId: reconcile.id, reason: "timedOut" });
    // Code that ignores its signal (or blocks the worker's event loop) never lets go.
    later(reconcile.timers, ctx.options.killGraceMs, () => {
      if (worker.reconciles.has(reconcile.id)) stopWorker(worker, "stuck");
    });
    schedule();
  };

  const assign = (worker: ControllerWorker, claimed: ReconcileClaim) => {
    const now = ctx.clock.now();
    const reconcile: ActiveReconcile = {
      id: reconcileIdOf(claimed.uid, claimed.claim.generation),
      uid: claimed.uid,
      claim: claimed.claim,
      resourceVersion: claimed.resource.metadata.resourceVersion,
      consecutiveErrors: claimed.consecutiveErrors,
      ended: false,
      timers: new Set(),
    };
    worker.reconciles.set(reconcile.id, reconcile);
    renewWhileHeld();
    const deadlineAt = now + worker.timeoutMs;
    later(reconcile.timers, worker.timeoutMs, () => onDeadline(worker, reconcile));
    void push(worker, {
      kind: "reconcile.assign",
      reconcileId: reconcile.id,
      resource: claimed.resource,
      deadlineAt,
    });
  };

  const hooks = {
    onReady(worker: ControllerWorker, pid: number) {
      if (worker.identity === null || worker.identity.pid !== pid) return false;
      markControllerWorkerLive(ctx.store, worker.workerEpoch);
      worker.ready = true;
      clearAll(worker.timers);
      idle(worker);
      schedule();
      return true;
    },
    onBlocked(worker: ControllerWorker, reason: "sourceChanged" | "loadFailed", detail: string) {
      worker.blocked = true;
      blockController(ctx.store, {
        controllerId: worker.controllerId,
        sourceDigest: worker.sourceDigest,
        reason,
        detail,
      });
      ctx.log("controller.blocked", { controller: worker.controllerName, reason });
    },
    onReconcileMessage(
      worker: ControllerWorker,
      reconcile: ActiveReconcile,
      message: ControllerMessage,
    ) {
      return applyReconcileMessage(
        ctx,
        {
          resolveWorkflow: deps.resolveWorkflow,
          retryDelayMs,
          wakeRuns: deps.wakeRuns,
          onEnded: (w, r) => release(w, r),
        },
        worker,
        reconcile,
        message as Parameters<typeof applyReconcileMessage>[4],
      );
    },
    onLateFinish: release,
    onViolation(worker: ControllerWorker, detail: string) {
      ctx.log("controller.worker_violation", { controller: worker.controllerName, detail });
      stopWorker(worker, "stuck");
    },
  };

  const spawn = (controllerId: string): ControllerWorker | null => {
    const pin = readPinnedController(ctx.store, controllerId);
    if (!pin || pin.blockedReason !== null) return null;
    const worker = launchControllerWorker(ctx, pin, {
      command: deps.command,
      env: deps.env,
      onOutputExceeded: (w) => stopWorker(w, "stuck"),
    });
    workers.set(controllerId, worker);
    const identity = worker.identity;
    if (identity) deps.registry.register({ identity, kind: "worker", runId: null });
    later(worker.timers, ctx.options.workerStartupMs, () => {
      if (!worker.ready) stopWorker(worker, "startup");
    });
    const served = serveControllerChannel(worker, hooks);
    worker.done = Promise.all([worker.spawned.exited, served]).then(async ([exit]) => {
      clearAll(worker.timers);
      if (identity) {
        await stopProcessGroup(identity, { graceMs: ctx.options.killGraceMs });
        deps.registry.unregister(identity);
      }
      await closeAfterDrain(worker.spawned, OUTPUT_DRAIN_MS);
      removeEmptyLogs(worker.spawned.logFiles);
      settleExit(worker, exit);
      if (workers.get(controllerId) === worker) workers.delete(controllerId);
      schedule();
    });
    ctx.log("controller.worker_start", { controller: pin.name });
    return worker;
  };

  /** Interrupts what the worker still held and records the epoch's outcome. */
  const settleExit = (
    worker: ControllerWorker,
    exit: { code: number | null; signal: NodeJS.Signals | null },
  ) => {
    const crashed = worker.stopReason === null && !worker.blocked;
    const countsAsError = crashed || worker.stopReason === "stuck" ||
      worker.stopReason === "startup";
    for (const reconcile of worker.reconciles.values()) {
      if (!reconcile.ended) {
        try {
          interruptReconcile(ctx.store, reconcile.claim, {
            uid: reconcile.uid,
            reason: crashed ? "workerCrashed" : `worker.${worker.stopReason ?? "exited"}`,
            countsAsError,
            retryDelayMs: retryDelayMs(reconcile.consecutiveErrors + 1),
          });
        } catch (error) {
          // Expired meanwhile: the recovery sweep settles it.
          if (!(error instanceof ClaimLostError)) {
            ctx.log("controller.interrupt_failed", { error: logError(error) });
          }
        }
      }
      reconcile.ended = true;
      clearAll(reconcile.timers);
    }
    worker.reconciles.clear();
    renewWhileHeld();
    try {
      finishControllerWorker(ctx.store, {
        workerEpoch: worker.workerEpoch,
        status: worker.stopReason === "stuck"
          ? "timedOut"
          : worker.stopReason === "startup"
          ? "timedOut"
          : worker.stopReason !== null || worker.blocked
          ? "exited"
          : exit.code === 0
          ? "exited"
          : "crashed",
        exitCode: exit.code,
        signal: exit.signal,
      });
    } catch (error) {
      ctx.log("controller.epoch_finish_failed", { error: logError(error) });
    }
    ctx.log("controller.worker_exit", {
      controller: worker.controllerName,
      code: exit.code,
      signal: exit.signal,
      crashed,
    });
  };

  const renew = () => {
    for (const worker of workers.values()) {
      for (const reconcile of worker.reconciles.values()) {
        if (reconcile.ended) continue;
        try {
          renewClaim(ctx.store, reconcile.claim);
        } catch (error) {
          if (!(error instanceof ClaimLostError)) continue; // busy: the next round retries
          reconcile.ended = true;
          void push(worker, {
            kind: "reconcile.abort",
            reconcileId: reconcile.id,
            reason: "claimLost",
          });
        }
      }
    }
  };

  /** Resources whose reconcile this host still holds (recovery must not take them). */
  const held = () => {
    const uids = new Set<string>();
    for (const worker of workers.values()) {
      for (const reconcile of worker.reconciles.values()) {
        if (!reconcile.ended) uids.add(reconcile.uid);
      }
    }
    return uids;
  };

  const tick = () => {
    tickQueued = false;
    if (!started || shuttingDown) return;
    // One clock reading for both: a time that is not due yet in the tick gets its timer.
    const now = ctx.clock.now();
    try {
      runTick(now);
    } catch (error) {
      ctx.log("controller.tick_failed", { error: logError(error) });
    }
    armDueTimer(now);
  };

  const runTick = (now: number) => {
    recoverExpiredReconciles(ctx, held());
    const capacity = options.maxConcurrentReconciles - inFlight();
    const claimFor = new Map<string, ControllerWorker>();
    if (capacity > 0) {
      for (const due of listDueReconciles(ctx.store, now, capacity + 64)) {
        if (claimFor.size >= capacity) break;
        const worker = workers.get(due.controllerId) ?? spawn(due.controllerId);
        if (!worker || !worker.ready || worker.stopReason !== null || worker.blocked) continue;
        // A reconcile past its deadline that has not let go may be blocking the worker: nothing
        // new goes there until it lets go or the worker is killed.
        if ([...worker.reconciles.values()].some((r) => r.ended)) continue;
        const pin = readPinnedController(ctx.store, due.controllerId);
        if (!pin || pin.sourceDigest !== worker.sourceDigest) {
          // Re-pinned: the old worker takes nothing new and goes once it is idle.
          if (worker.reconciles.size === 0) stopWorker(worker, "repinned");
          continue;
        }
        claimFor.set(due.uid, worker);
      }
    }
    if (claimFor.size > 0) {
      const claimed = claimReconciles(ctx.store, {
        uids: [...claimFor.keys()],
        ownerId: ctx.hostOwnerId,
        hostEpoch: ctx.hostEpoch,
        ttlMs: ctx.options.claimTtlMs,
        token: () => ctx.ids.token(),
      });
      for (const claim of claimed) assign(claimFor.get(claim.uid)!, claim);
    }
    for (const worker of workers.values()) {
      if (!worker.ready || worker.stopReason !== null || worker.reconciles.size > 0) continue;
      const left = options.workerIdleMs - (now - worker.idleSince);
      if (left <= 0) stopWorker(worker, "idle");
      // A timer may fire a little before the wall clock says the period is over.
      else if (worker.timers.size === 0) later(worker.timers, left + TIMER_SLACK_MS, schedule);
    }
  };

  const armDueTimer = (now: number) => {
    if (dueTimer) clearTimeout(dueTimer);
    dueTimer = null;
    if (!started || shuttingDown) return;
    const next = nextReconcileDue(ctx.store);
    // Due now but not claimable yet (capacity, a worker starting or stuck): the end of a
    // reconcile, the worker's ready message or its exit ticks again.
    let delay = next !== null && next > now
      ? Math.min(next - now + TIMER_SLACK_MS, MAX_TIMER_MS)
      : null;
    // A claim this host does not hold (an earlier host's) is recovered once it expires.
    const expiry = nextForeignClaimExpiry(ctx.store, held());
    if (expiry !== null) delay = Math.min(delay ?? MAX_TIMER_MS, Math.max(0, expiry - now) + 1);
    if (hasChildRunsInFlight(ctx.store)) {
      delay = Math.min(delay ?? CHILD_BACKSTOP_MS, CHILD_BACKSTOP_MS);
    }
    if (delay !== null) dueTimer = setTimeout(schedule, delay);
  };

  const schedule = () => {
    if (tickQueued) return;
    tickQueued = true;
    setImmediate(tick);
  };

  return {
    async recover() {
      await recoverControllers(ctx);
    },
    start() {
      if (started) return;
      started = true;
      schedule();
    },
    wake: schedule,
    resolve: (input) => resolvers.resolve(input),
    activeWorkerCount: () => workers.size,
    hasPendingWork() {
      if (workers.size > 0 || resolvers.count() > 0) return true;
      return !shuttingDown && hasPendingReconciles(ctx.store);
    },
    async shutdown() {
      shuttingDown = true;
      renewWhileHeld();
      if (dueTimer) clearTimeout(dueTimer);
      for (const worker of workers.values()) {
        for (const reconcile of worker.reconciles.values()) {
          if (reconcile.ended) continue;
          try {
            interruptReconcile(ctx.store, reconcile.claim, {
              uid: reconcile.uid,
              reason: "hostShutdown",
              countsAsError: false,
              retryDelayMs: 0,
            });
          } catch (error) {
            ctx.log("controller.interrupt_failed", { error: logError(error) });
          }
          reconcile.ended = true;
        }
        stopWorker(worker, "shutdown");
      }
      await Promise.all([...workers.values()].map((worker) => worker.done));
      await resolvers.shutdown();
    },
  };
}

/** Only the class name: messages may carry paths, which logs never show. */

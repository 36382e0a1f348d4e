/**
 * The controller scheduler, in the host event loop (short SQLite transactions, timers, process
 * bookkeeping; controller code runs only in workers and resolvers):
 *
 *   due       one query finds resources due now (apply, delete, reconcile requests, child runs
 *             that ended, requeueAfter and backoff times that passed); one timer is armed for
 *             the earliest later one (`controller_queue.available_at`), so requeue times are
 *             durable and survive host restarts.
 *   claim     at most `maxConcurrentReconciles` reconciles at once, each pushed to its
 *             controller's worker (worker-fleet.ts: one per controller at its pinned digest,
 *             started on demand); the held reconciles, their renewal and deadlines are
 *             reconcile-holds.ts.
 */
import { readPinnedController } from "../../state/controllers/controller-workers.ts";
import {
  hasChildRunsInFlight,
  hasPendingReconciles,
} from "../../state/controllers/controller-queries.ts";
import {
  claimReconciles,
  listDueReconciles,
  nextForeignClaimExpiry,
  nextReconcileDue,
} from "../../state/controllers/reconcile-claims.ts";
import { interruptReconcile } from "../../state/controllers/reconcile-end.ts";
import type { HostContext } from "../host-context.ts";
import { logError } from "../host-log.ts";
import type { ControllerSupervision } from "./api.ts";
import {
  type ControllerWorker,
  stopControllerWorker,
} from "../supervision/controllers/controller-worker.ts";
import {
  type ControllerOptions,
  DEFAULT_CONTROLLER_OPTIONS,
  reconcileBackoffMs,
} from "./options.ts";
import { createReconcileHolds, type Fleet, type ReconcileHolds } from "./reconcile-holds.ts";
import { recoverControllers, recoverExpiredReconciles } from "./recovery.ts";
import { later, TIMER_SLACK_MS } from "../supervision/children/timers.ts";
import {
  controllerStopReason,
  isControllerLive,
  takesReconciles,
} from "../supervision/controllers/controller-life.ts";
import { createWorkerSpawner, type WorkerFleetDeps } from "./worker-fleet.ts";
import { createResolverPool } from "../supervision/controllers/resolver-pool.ts";
import { inNextCommit } from "../commit-group.ts";

/** The due timer is re-armed at least this often, so a wall-clock jump is noticed. */
const MAX_TIMER_MS = 60_000;
/**
 * While a controller's child run is on its way, a backstop look this often: every run transition
 * the host makes wakes the scheduler already, this only covers one that forgot to.
 */
const CHILD_BACKSTOP_MS = 30_000;

export interface ControllerSupervisionDeps extends WorkerFleetDeps {
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
  const resolvers = createResolverPool(ctx, { ...deps.children, idleMs: options.resolverIdleMs });
  // No timer runs while nothing is due or in flight: an idle host costs nothing here.
  let dueTimer: ReturnType<typeof setTimeout> | null = null;
  let started = false;
  let shuttingDown = false;
  let tickQueued = false;
  /** Resources whose claim waits for the next group commit (counted against the capacity). */
  const claiming = new Set<string>();

  const schedule = () => {
    if (tickQueued) return;
    tickQueued = true;
    setImmediate(tick);
  };
  const fleet: Fleet = {
    ctx,
    options,
    workers,
    retryDelayMs: (errors) => reconcileBackoffMs(errors, options, random),
    schedule,
    isShuttingDown: () => shuttingDown,
  };
  const holds = createReconcileHolds(fleet);
  const spawn = createWorkerSpawner(fleet, holds, deps);
  const stopWorker = (worker: ControllerWorker, reason: "idle" | "repinned" | "shutdown") =>
    stopControllerWorker(ctx, worker, reason);

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
    recoverExpiredReconciles(ctx, holds.held());
    const capacity = options.maxConcurrentReconciles - holds.inFlight() - claiming.size;
    const claimFor = capacity > 0 ? pickDue(now, capacity) : new Map<string, ControllerWorker>();
    if (claimFor.size > 0) claimInNextCommit(ctx, { holds, workers, claiming, schedule }, claimFor);
    stopIdleWorkers(workers.values(), { idleMs: options.workerIdleMs, now }, stopWorker, schedule);
  };

  /** Due resources to claim now (at most `capacity`), each with the worker it goes to. */
  const pickDue = (now: number, capacity: number) => {
    const claimFor = new Map<string, ControllerWorker>();
    // Whether a worker takes new reconciles is decided once a tick, not once per due resource:
    // nothing in this loop changes its reconciles or its controller's pin.
    const takes = new Map<ControllerWorker, boolean>();
    // As many due rows as can be claimed (those claiming already are still due, first); only when
    // some go to workers that take nothing now, a second look reaches 64 rows further.
    let read = 0;
    for (const limit of [capacity + claiming.size, capacity + claiming.size + 64]) {
      const due = listDueReconciles(ctx.store, now, limit);
      for (const row of due.slice(read)) {
        if (claimFor.size >= capacity) return claimFor;
        if (claiming.has(row.uid) || claimFor.has(row.uid)) continue;
        const worker = workers.get(row.controllerId) ?? spawn(row.controllerId);
        if (!worker) continue;
        let open = takes.get(worker);
        if (open === undefined) {
          open = takesNewReconciles(ctx, worker, stopWorker);
          takes.set(worker, open);
        }
        if (open) claimFor.set(row.uid, worker);
      }
      if (claimFor.size >= capacity || due.length < limit) break;
      read = due.length;
    }
    return claimFor;
  };

  const armDueTimer = (now: number) => {
    if (dueTimer) clearTimeout(dueTimer);
    dueTimer = null;
    if (!started || shuttingDown) return;
    const delay = dueTimerDelay(ctx, now, holds.held());
    if (delay !== null) dueTimer = setTimeout(schedule, delay);
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
      holds.renewWhileHeld();
      if (dueTimer) clearTimeout(dueTimer);
      for (const worker of workers.values()) {
        // Not an error: they run again under the next host.
        holds.interruptHeld(worker, { reason: "hostShutdown", countsAsError: false, retry: false });
        stopWorker(worker, "shutdown");
      }
      await Promise.all([...workers.values()].map((worker) => worker.done));
      await resolvers.shutdown();
    },
  };
}

/** When the scheduler must look again without being woken, or null: nothing is due later. */
function dueTimerDelay(ctx: HostContext, now: number, held: Set<string>): number | null {
  const next = nextReconcileDue(ctx.store);
  // Due now but not claimable yet (capacity, a worker starting or stuck): the end of a
  // reconcile, the worker's ready message or its exit ticks again.
  let delay = next !== null && next > now
    ? Math.min(next - now + TIMER_SLACK_MS, MAX_TIMER_MS)
    : null;
  // A claim this host does not hold (an earlier host's) is recovered once it expires.
  const expiry = nextForeignClaimExpiry(ctx.store, held);
  if (expiry !== null) delay = Math.min(delay ?? MAX_TIMER_MS, Math.max(0, expiry - now) + 1);
  if (hasChildRunsInFlight(ctx.store)) {
    delay = Math.min(delay ?? CHILD_BACKSTOP_MS, CHILD_BACKSTOP_MS);
  }
  return delay;
}

/**
 * Claims the picked resources in the next group commit (with the proposals read this turn) and
 * assigns each to its worker; a resource whose worker went meanwhile is given back.
 */
function claimInNextCommit(
  ctx: HostContext,
  state: {
    holds: ReconcileHolds;
    workers: ReadonlyMap<string, ControllerWorker>;
    /** Resources whose claim waits for the next group commit (counted against the capacity). */
    claiming: Set<string>;
    schedule(): void;
  },
  claimFor: ReadonlyMap<string, ControllerWorker>,
): void {
  const { holds, workers, claiming, schedule } = state;
  const uids = [...claimFor.keys()];
  for (const uid of uids) claiming.add(uid);
  void inNextCommit(ctx.store, () =>
    claimReconciles(ctx.store, {
      uids,
      ownerId: ctx.hostOwnerId,
      hostEpoch: ctx.hostEpoch,
      ttlMs: ctx.options.claimTtlMs,
      token: () => ctx.ids.token(),
    })).then((claimed) => {
      for (const uid of uids) claiming.delete(uid);
      for (const claim of claimed) {
        const worker = claimFor.get(claim.uid)!;
        if (workers.get(worker.controllerId) === worker && controllerStopReason(worker) === null) {
          holds.assign(worker, claim);
          continue;
        }
        // The worker went while the claim waited for its commit: give the resource back.
        try {
          interruptReconcile(ctx.store, claim.claim, {
            uid: claim.uid,
            reason: "worker.gone",
            countsAsError: false,
            retryDelayMs: 0,
          });
        } catch (error) {
          ctx.log("controller.interrupt_failed", { error: logError(error) });
        }
      }
      schedule();
    }, (error) => {
      for (const uid of uids) claiming.delete(uid);
      ctx.log("controller.claim_failed", { error: logError(error) });
      schedule();
    });
}

/**
 * Whether `worker` may be given new reconciles now: it is live, none of its reconciles passed its
 * deadline without letting go (it may be blocking the worker: nothing new goes there until it lets
 * go or the worker is killed), and it runs the controller's pinned source. A re-pinned worker
 * takes nothing new and is stopped once it is idle.
 */
function takesNewReconciles(
  ctx: HostContext,
  worker: ControllerWorker,
  stop: (worker: ControllerWorker, reason: "repinned") => void,
): boolean {
  if (!takesReconciles(worker)) return false;
  for (const reconcile of worker.reconciles.values()) if (reconcile.ended) return false;
  const pin = readPinnedController(ctx.store, worker.controllerId);
  if (pin && pin.sourceDigest === worker.sourceDigest) return true;
  if (worker.reconciles.size === 0) stop(worker, "repinned");
  return false;
}

/** Stops the workers idle for `idleMs` by `now`; an idle one not yet due gets a timer. */
function stopIdleWorkers(
  workers: Iterable<ControllerWorker>,
  { idleMs, now }: { idleMs: number; now: number },
  stop: (worker: ControllerWorker, reason: "idle") => void,
  schedule: () => void,
): void {
  for (const worker of workers) {
    if (!isControllerLive(worker) || worker.reconciles.size > 0) continue;
    const left = idleMs - (now - worker.idleSince);
    if (left <= 0) stop(worker, "idle");
    // A timer may fire a little before the wall clock says the period is over.
    else if (worker.timers.size === 0) later(worker.timers, left + TIMER_SLACK_MS, schedule);
  }
}

/**
 * Prepared run processes. A worker whose epoch parked on an interactive request has its run's
 * workflow loaded; instead of exiting (and a fresh process starting twice per step: a validation
 * child, then the next worker) the host may keep it, with no claim, as the run's prepared child:
 *
 *   offer    the worker says `worker.exiting` after the park; the host keeps it when the run
 *            waits on a pending interactive request, the host is not stopping and there is room
 *            (at most `maxPreparedChildren`; the oldest idle one makes room);
 *   adopt    its epoch is recorded `exited` like any other; the process waits, at most
 *            `preparedIdleMs` (a submission that arrives before this is already validated in
 *            it). At its first adoption it is named in `host_children` (kind validator) until
 *            it is retired, whoever owns it by then: one write each way however many steps it
 *            serves;
 *   borrow   a submission of the run is validated in it (validation.ts): same validate request,
 *            same fenced verdict, same commit as in a fresh validation child;
 *   take     after acceptance (or a deadline) the scheduler launches the next epoch into it:
 *            a new claim generation and worker epoch, recorded like a spawn (launch-worker.ts).
 *
 * A prepared child holds no claim and nothing it sends outside a validation exchange or an epoch
 * is read by anyone: it cannot commit anything. One that dies, breaks an exchange, passes its
 * output cap, idles out, or whose run is cancelled is stopped (its group, by exact identity) and
 * forgotten; the next submission or epoch then starts a fresh child as before.
 */
import { readRunInteraction } from "../../state/interaction-queries.ts";
import { logError } from "../host-log.ts";
import type { ActiveWorker } from "./active-worker.ts";
import type { HostContext } from "../host-context.ts";
import { DEFAULT_SUPERVISION_OPTIONS } from "../supervision-options.ts";
import { retireChild } from "./children/retire-child.ts";
import type { SupervisedChild } from "./children/spawn-child.ts";
import { armChildDeadline, type ChildDeadline } from "./children/child-deadline.ts";
import { createLiveChildren, type LiveChild } from "./children/live-children.ts";
import { isSettled, stopReasonOf } from "./worker-life.ts";

export interface PreparedChild extends LiveChild {
  runId: string;
  spawned: SupervisedChild;
  state: PreparedState;
}

/**
 * Where a kept process is. Until its last epoch is recorded (a submission may arrive first) it is
 * `kept`: it can validate but not be taken, and waits with no idle bound. Adopted, it is `idle`
 * under the kit's bound on its wait (child-deadline.ts), `busy` in a validation exchange, or
 * `taken` to run an epoch again.
 */
type PreparedState =
  | { name: "kept"; busy: boolean }
  | { name: "idle"; bound: ChildDeadline }
  | { name: "busy" }
  | { name: "taken" }
  | { name: "gone"; retired: Promise<void> };

export interface PreparedChildren {
  /** Whether the host keeps `worker`'s process now that its epoch parked (`worker.exiting`). */
  offer(worker: ActiveWorker): boolean;
  /** The kept worker's epoch is recorded: its process waits for the run's next job. */
  adopt(worker: ActiveWorker): void;
  /** The run's idle child for one validation exchange (busy until released), or null. */
  borrow(runId: string): PreparedChild | null;
  /** After an exchange: idle again, or stopped when the exchange broke. Idempotent. */
  release(child: PreparedChild, usable: boolean): void;
  /** The run's idle child for its next epoch (it leaves the pool), or null. */
  take(runId: string): PreparedChild | null;
  /** Stops the run's child (the run was cancelled). */
  stopRun(runId: string): Promise<void>;
  /** Stops every child (host shutdown). */
  shutdown(): Promise<void>;
  /** Resolves when `offer` keeps the run's process; `cancel` forgets the wait. */
  offered(runId: string): { kept: Promise<void>; cancel(): void };
}

export function createPreparedChildren(ctx: HostContext): PreparedChildren {
  const pool = newPool(ctx);
  const { children } = pool;
  /** Validations waiting for a run's worker to be kept (see `offered`). */
  const waiting = createKeptWaits();
  return {
    offer(worker) {
      if (!keeps(pool, worker)) return false;
      const child: PreparedChild = {
        runId: worker.runId,
        spawned: worker.spawned,
        state: { name: "kept", busy: false },
        stop: (why) => stop(pool, child, why),
      };
      children.set(worker.runId, child);
      pool.live.add(child);
      waiting.wake(worker.runId);
      return true;
    },
    offered: (runId) => waiting.wait(runId),
    adopt: (worker) => adopt(pool, worker),
    borrow(runId) {
      const child = children.get(runId);
      if (!child || !isIdle(child.state)) return null;
      leave(child, child.state.name === "kept" ? { name: "kept", busy: true } : { name: "busy" });
      return child;
    },
    release(child, usable) {
      const { state } = child;
      if (state.name !== "busy" && !(state.name === "kept" && state.busy)) return;
      if (!usable || pool.closing) {
        void stop(pool, child, "validationBroken");
        return;
      }
      children.delete(child.runId);
      children.set(child.runId, child);
      if (state.name === "kept") child.state = { name: "kept", busy: false };
      else waitIdle(pool, child);
    },
    take(runId) {
      const child = children.get(runId);
      if (child?.state.name !== "idle") return null;
      leave(child, { name: "taken" });
      children.delete(runId);
      pool.live.remove(child);
      // From here it is a worker (named in run_workers by the launch). Its registry entry and
      // host_children row stay until the process is retired: no write on the way.
      return child;
    },
    stopRun: pool.live.stopRun,
    shutdown() {
      pool.closing = true;
      return pool.live.stopAll();
    },
  };
}

/** The pool's state, shared by the steps below. */
function newPool(ctx: HostContext) {
  return {
    ctx,
    max: ctx.options.maxPreparedChildren ?? DEFAULT_SUPERVISION_OPTIONS.maxPreparedChildren,
    idleMs: ctx.options.preparedIdleMs ?? DEFAULT_SUPERVISION_OPTIONS.preparedIdleMs,
    /** By run, oldest first (a child used again moves to the end). */
    children: new Map<string, PreparedChild>(),
    /** Kept processes until retired or taken, retirements under way included. */
    live: createLiveChildren(),
    /** Processes named in host_children (once, at their first adoption). */
    named: new WeakSet<SupervisedChild>(),
    closing: false,
  };
}
type Pool = ReturnType<typeof newPool>;

/**
 * Whether the pool keeps the worker's process: an identified one the host does not stop, whose
 * run settled waiting on its Pi session, while the host runs and there is room.
 */
function keeps(pool: Pool, worker: ActiveWorker): boolean {
  if (pool.closing || pool.max < 1 || worker.spawned.identity === null) return false;
  if (stopReasonOf(worker) !== null || !isSettled(worker) || pool.children.has(worker.runId)) {
    return false;
  }
  // Only a run waiting on its Pi session: a checkpoint or human decision may wait for days.
  if (readRunInteraction(pool.ctx.store, worker.runId) === undefined) return false;
  return makeRoom(pool);
}

/** The kept worker's epoch is recorded: as the run's prepared child, it waits. */
function adopt(pool: Pool, worker: ActiveWorker): void {
  const child = pool.children.get(worker.runId);
  if (child?.state.name !== "kept" || child.spawned !== worker.spawned) return;
  const { busy } = child.state;
  if (!pool.named.has(child.spawned)) name(pool, child);
  child.spawned.onOutputExceeded = () => void stop(pool, child, "outputExceeded");
  if (pool.closing) {
    void stop(pool, child, "shutdown");
    return;
  }
  // A validation that began before this keeps it busy; its release arms the idle deadline.
  if (busy) child.state = { name: "busy" };
  else waitIdle(pool, child);
}

/** Retires the child in the kit's one order (its registry entry goes with it); idempotent. */
function stop(pool: Pool, child: PreparedChild, why: string): Promise<void> {
  if (child.state.name === "gone") return child.state.retired;
  if (child.state.name === "taken") return Promise.resolve();
  if (pool.children.get(child.runId) === child) pool.children.delete(child.runId);
  pool.ctx.log("prepared.stopped", { run: child.runId, why });
  const retired = retireChild(child.spawned, pool.ctx.options.killGraceMs)
    .catch((error) => pool.ctx.log("prepared.stop_failed", { error: logError(error) }))
    .finally(() => pool.live.remove(child));
  leave(child, { name: "gone", retired });
  return retired;
}

/** Idle again: an adopted child waits at most `idleMs` for its run's next job. */
function waitIdle(pool: Pool, child: PreparedChild): void {
  const bound = armChildDeadline(child.spawned, pool.idleMs, () => void stop(pool, child, "idle"));
  leave(child, { name: "idle", bound });
}

/**
 * At its first adoption: its registry entry becomes a validator's, named in `host_children` (a
 * restarted host reaps it by that row) until it is retired, whoever owns it by then; one that
 * exits while it waits idle is stopped (and leaves the pool).
 */
function name(pool: Pool, { spawned, runId }: PreparedChild): void {
  pool.named.add(spawned);
  spawned.registered?.register({ identity: spawned.identity!, kind: "validator", runId });
  void spawned.exited.then(() => {
    const child = pool.children.get(runId);
    if (child?.spawned === spawned && child.state.name === "idle") void stop(pool, child, "exited");
  });
}

/** Waits, by run, for a worker's process to be kept (`offered`); `wake` ends the run's waits. */
function createKeptWaits() {
  const waiting = new Map<string, Set<() => void>>();
  return {
    wait(runId: string): { kept: Promise<void>; cancel(): void } {
      let wake = () => {};
      const kept = new Promise<void>((resolve) => (wake = resolve));
      let set = waiting.get(runId);
      if (!set) waiting.set(runId, set = new Set());
      set.add(wake);
      return {
        kept,
        cancel() {
          const current = waiting.get(runId);
          current?.delete(wake);
          if (current?.size === 0) waiting.delete(runId);
        },
      };
    },
    wake(runId: string): void {
      for (const wake of waiting.get(runId) ?? []) wake();
      waiting.delete(runId);
    },
  };
}

/** Room for one more: the oldest idle child goes when the pool (at most `max`) is full. */
function makeRoom(pool: Pool): boolean {
  if (pool.children.size < pool.max) return true;
  for (const child of pool.children.values()) {
    if (isIdle(child.state)) {
      void stop(pool, child, "room");
      return true;
    }
  }
  return false;
}

/** Whether a validation could borrow it now (idle, adopted or not). */
function isIdle(state: PreparedState | undefined): boolean {
  return state?.name === "idle" || state?.name === "kept" && !state.busy;
}

/** Moves it to `next`, disarming the idle bound it leaves. */
function leave(child: PreparedChild, next: PreparedState): void {
  if (child.state.name === "idle") child.state.bound.disarm();
  child.state = next;
}

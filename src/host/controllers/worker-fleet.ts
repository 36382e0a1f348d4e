/**
 * The scheduler's side of its controller workers, one per controller at its pinned digest,
 * started on demand through the process supervision (its controller children): what the
 * channel's messages mean here (ready, blocked, the reconciles' proposals, violations), and the
 * exit: reconciles the worker still held are interrupted (applying effects back to pending; a
 * crash counts as an error, so a crashing controller backs off) and the epoch's outcome is
 * recorded.
 */
import {
  blockController,
  finishControllerWorker,
  markControllerWorkerLive,
  readPinnedController,
} from "../../state/controllers/controller-workers.ts";
import type { ControllerMessage } from "../../protocol/controller-worker.ts";
import type { ResolveRequest, ResolveResult } from "../host-context.ts";
import type { ControllerWorkerCommand } from "../supervision/controllers/controller-worker.ts";
import { startControllerWorker } from "../supervision/controllers/start-controller-worker.ts";
import {
  type ActiveReconcile,
  type ControllerWorker,
  stopControllerWorker,
} from "../supervision/controllers/controller-worker.ts";
import type { ChildExit } from "../supervision/children/spawn-child.ts";
import {
  controllerStopReason,
  isBlocked,
  isControllerLaunching,
  markBlocked,
  markControllerLive,
} from "../supervision/controllers/controller-life.ts";
import { logError } from "../host-log.ts";
import { applyReconcileMessage } from "../controller-messages/reconcile-handlers.ts";
import { type Fleet, markIdle, type ReconcileHolds } from "./reconcile-holds.ts";

export interface WorkerFleetDeps {
  /** How its controller worker and resolver processes are started (the process supervision). */
  children: ControllerWorkerCommand;
  resolveWorkflow(request: ResolveRequest): Promise<ResolveResult>;
  /** The run scheduler: a child run was enqueued. */
  wakeRuns(): void;
}

/** Starts the controller's worker (null: no pinned controller, or it is blocked). */
export type SpawnControllerWorker = (controllerId: string) => ControllerWorker | null;

export function createWorkerSpawner(
  fleet: Fleet,
  holds: ReconcileHolds,
  deps: WorkerFleetDeps,
): SpawnControllerWorker {
  const { ctx } = fleet;
  const stop = (worker: ControllerWorker) => stopControllerWorker(ctx, worker, "stuck");

  const hooks = {
    onReady(worker: ControllerWorker, pid: number) {
      if (worker.spawned.identity?.pid !== pid) return false;
      // Stopped before it got ready: nothing to record.
      if (!isControllerLaunching(worker)) return true;
      markControllerWorkerLive(ctx.store, worker.workerEpoch);
      markControllerLive(worker);
      markIdle(fleet, worker);
      fleet.schedule();
      return true;
    },
    onBlocked(worker: ControllerWorker, reason: "sourceChanged" | "loadFailed", detail: string) {
      markBlocked(worker);
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
          retryDelayMs: fleet.retryDelayMs,
          wakeRuns: deps.wakeRuns,
          onEnded: (w, r) => holds.release(w, r),
        },
        worker,
        reconcile,
        message as Parameters<typeof applyReconcileMessage>[4],
      );
    },
    onLateFinish: holds.release,
    onViolation(worker: ControllerWorker, detail: string) {
      ctx.log("controller.worker_violation", { controller: worker.controllerName, detail });
      stop(worker);
    },
  };

  /** Interrupts what the worker still held and records the epoch's outcome. */
  const settleExit = (
    worker: ControllerWorker,
    exit: ChildExit,
  ) => {
    const stopReason = controllerStopReason(worker);
    const crashed = stopReason === null && !isBlocked(worker);
    const stuck = stopReason === "stuck" || stopReason === "startup";
    holds.interruptHeld(worker, {
      reason: crashed ? "workerCrashed" : `worker.${stopReason ?? "exited"}`,
      countsAsError: crashed || stuck,
      retry: true,
    });
    worker.reconciles.clear();
    holds.renewWhileHeld();
    const ended = stopReason !== null || isBlocked(worker) || exit.code === 0;
    try {
      finishControllerWorker(ctx.store, {
        workerEpoch: worker.workerEpoch,
        status: stuck ? "timedOut" : ended ? "exited" : "crashed",
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

  return (controllerId) => {
    const pin = readPinnedController(ctx.store, controllerId);
    if (!pin || pin.blockedReason !== null) return null;
    const worker = startControllerWorker(ctx, pin, deps.children, {
      ...hooks,
      onExit(worker, exit) {
        settleExit(worker, exit);
        if (fleet.workers.get(controllerId) === worker) fleet.workers.delete(controllerId);
        fleet.schedule();
      },
    });
    fleet.workers.set(controllerId, worker);
    ctx.log("controller.worker_start", { controller: pin.name });
    return worker;
  };
}

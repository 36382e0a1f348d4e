/**
 * Controller worker processes, one per controller at its pinned digest, started on demand: the
 * spawn (epoch, process group, registry), the channel hooks (ready, blocked, the reconciles'
 * proposals, violations), and the exit: reconciles the worker still held are interrupted
 * (applying effects back to pending; a crash counts as an error, so a crashing controller backs
 * off) and the epoch's outcome is recorded.
 */
import {
  blockController,
  finishControllerWorker,
  markControllerWorkerLive,
  readPinnedController,
} from "../../../state/controllers/controller-workers.ts";
import type { ControllerMessage } from "../../../protocol/controller-worker.ts";
import type { ResolveRequest, ResolveResult } from "../api.ts";
import type { ProcessRegistry } from "../process-registry.ts";
import { retireChild } from "../children/retire-child.ts";
import type { ChildCommand } from "../children/spawn-child.ts";
import { logError } from "../../host-log.ts";
import {
  type ActiveReconcile,
  type ControllerWorker,
  launchControllerWorker,
  nameControllerWorker,
  stopControllerWorker,
} from "./controller-worker.ts";
import { serveControllerChannel } from "./controller-session.ts";
import { applyReconcileMessage } from "../../controller-messages/reconcile-handlers.ts";
import { type Fleet, markIdle, type ReconcileHolds } from "./reconcile-holds.ts";
import { clearAll } from "../children/timers.ts";
import { armStartupDeadline } from "../children/child-deadline.ts";
import { controllerStopReason, markBlocked, markControllerLive } from "./controller-life.ts";

export interface WorkerFleetDeps {
  command: ChildCommand;
  env: NodeJS.ProcessEnv;
  registry: ProcessRegistry;
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
      if (worker.identity === null || worker.identity.pid !== pid) return false;
      // Stopped before it got ready: nothing to record.
      if (worker.life.phase.name !== "launching") return true;
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
    exit: { code: number | null; signal: NodeJS.Signals | null },
  ) => {
    const stopReason = controllerStopReason(worker);
    const crashed = stopReason === null && !worker.life.blocked;
    const stuck = stopReason === "stuck" || stopReason === "startup";
    holds.interruptHeld(worker, {
      reason: crashed ? "workerCrashed" : `worker.${stopReason ?? "exited"}`,
      countsAsError: crashed || stuck,
      retry: true,
    });
    worker.reconciles.clear();
    holds.renewWhileHeld();
    const ended = stopReason !== null || worker.life.blocked || exit.code === 0;
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
    const worker = launchControllerWorker(ctx, pin, {
      command: deps.command,
      env: deps.env,
      registry: deps.registry,
      onOutputExceeded: stop,
    });
    fleet.workers.set(controllerId, worker);
    armStartupDeadline(worker.spawned, worker.life, ctx.options.workerStartupMs, () => {
      stopControllerWorker(ctx, worker, "startup");
    });
    const served = nameControllerWorker(ctx, worker).then(() =>
      serveControllerChannel(worker, hooks)
    );
    worker.done = Promise.all([worker.spawned.exited, served]).then(async ([exit]) => {
      clearAll(worker.timers);
      await retireChild(worker.spawned, ctx.options.killGraceMs);
      settleExit(worker, exit);
      if (fleet.workers.get(controllerId) === worker) fleet.workers.delete(controllerId);
      fleet.schedule();
    });
    ctx.log("controller.worker_start", { controller: pin.name });
    return worker;
  };
}

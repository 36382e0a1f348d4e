/**
 * The one entry the controller scheduler (src/host/controllers/) starts a controller worker by:
 * the launch, its start-up deadline, its start identity in its epoch record, its channel served
 * with the scheduler's hooks, and, once the process is gone, its retirement (group stopped,
 * registry record removed) before the scheduler settles what it held.
 */
import type { PinnedController } from "../../../state/controllers/controller-workers.ts";
import type { HostContext } from "../../host-context.ts";
import type { ChildExit } from "../children/spawn-child.ts";
import { retireChild } from "../children/retire-child.ts";
import { clearAll } from "../children/timers.ts";
import { armStartupDeadline } from "../children/child-deadline.ts";
import {
  type ControllerWorker,
  type ControllerWorkerCommand,
  launchControllerWorker,
  nameControllerWorker,
  stopControllerWorker,
} from "./controller-worker.ts";
import { type ControllerSessionHooks, serveControllerChannel } from "./controller-session.ts";

export interface ControllerWorkerHooks extends ControllerSessionHooks {
  /** The worker is gone and retired: settle the reconciles it held and record its outcome. */
  onExit(worker: ControllerWorker, exit: ChildExit): void;
}

export function startControllerWorker(
  ctx: HostContext,
  controller: PinnedController,
  how: ControllerWorkerCommand,
  hooks: ControllerWorkerHooks,
): ControllerWorker {
  const worker = launchControllerWorker(ctx, controller, {
    ...how,
    onOutputExceeded: (w) => stopControllerWorker(ctx, w, "stuck"),
  });
  armStartupDeadline(worker.spawned, worker.life, ctx.options.workerStartupMs, () => {
    stopControllerWorker(ctx, worker, "startup");
  });
  const served = nameControllerWorker(ctx, worker).then(() =>
    serveControllerChannel(worker, hooks)
  );
  worker.done = Promise.all([worker.spawned.exited, served]).then(async ([exit]) => {
    clearAll(worker.timers);
    await retireChild(worker.spawned, ctx.options.killGraceMs);
    hooks.onExit(worker, exit);
  });
  return worker;
}

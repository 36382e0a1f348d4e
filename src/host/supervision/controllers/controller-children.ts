/**
 * What the process supervision offers the controller scheduler (src/host/controllers/): starting
 * a controller worker, and the controller source resolver, bound to this host's command,
 * environment and registry (a worker is stopped with controller-worker.ts's
 * stopControllerWorker). The scheduler decides when; these spawn, fence and retire.
 */
import type { PinnedController } from "../../../state/controllers/controller-workers.ts";
import type { HostContext } from "../../host-context.ts";
import type { ControllerWorker, ControllerWorkerCommand } from "./controller-worker.ts";
import { type ControllerWorkerHooks, startControllerWorker } from "./start-controller-worker.ts";
import { createResolverPool, type ResolverPool } from "./resolver-pool.ts";

export interface ControllerChildren {
  /** Starts the pinned controller's worker (start-controller-worker.ts). */
  startWorker(controller: PinnedController, hooks: ControllerWorkerHooks): ControllerWorker;
  /** The controller source resolver child, kept for `idleMs` between requests. */
  resolverPool(idleMs: number): ResolverPool;
}

export function createControllerChildren(
  ctx: HostContext,
  how: ControllerWorkerCommand,
): ControllerChildren {
  return {
    startWorker: (controller, hooks) => startControllerWorker(ctx, controller, how, hooks),
    resolverPool: (idleMs) => createResolverPool(ctx, { ...how, idleMs }),
  };
}

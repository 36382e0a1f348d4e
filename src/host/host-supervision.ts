/**
 * The host's back half, joined: the process supervision (supervision/: run workers, recovery,
 * validations, prepared processes, resolvers, the compile cache warm-up, every child spawned and
 * retired by its kit) and the controller scheduler (controllers/: when each resource
 * reconciles), which starts its controller workers through the supervision's controller
 * children. The host main creates one `Supervision` after it holds the host epoch and before it
 * accepts commands; the front half (lifecycle, socket, commands) sees only this seam.
 */
import type { HostContext } from "./supervision/api.ts";
import {
  createProcessSupervision,
  type ProcessSupervision,
  type SupervisionExtras,
} from "./supervision/supervision.ts";
import type { ControllerSupervision } from "./controllers/api.ts";
import type { ControllerOptions } from "./controllers/options.ts";
import { createControllerSupervision } from "./controllers/scheduler.ts";

export type { SupervisionExtras };

export interface SupervisionContext extends HostContext {
  /** Controller tunables (controllers/options.ts); the defaults when absent. */
  controllerOptions?: ControllerOptions;
}

export interface Supervision
  extends Omit<ProcessSupervision, "controllerChildren" | "warmCompileCache" | "shutdown"> {
  /** Runs the spec's recovery steps 2-10, in order, before commands are accepted. */
  recover(): Promise<void>;
  /** Starts the run and controller schedulers and their timers. */
  start(): void;
  /**
   * Once the host reported ready: warms a new compile cache in a background child that nothing
   * waits for (supervision/compile-cache-warmup.ts).
   */
  warmCompileCache(): void;
  /** Called after a command made a run or a resource due (start, resume, apply): schedule. */
  wake(): void;
  /** Controllers: resolver, scheduler and workers (controllers/scheduler.ts). */
  readonly controllers: ControllerSupervision;
  /** Run and controller workers alive. */
  activeWorkerCount(): number;
  /** Stops scheduling, parks live runs at their last durable boundary, stops all groups. */
  shutdown(): Promise<void>;
}

export function createSupervision(
  ctx: SupervisionContext,
  extras: SupervisionExtras = {},
): Supervision {
  const processes = createProcessSupervision(ctx, extras, {
    // A controller child run may have ended: its parent resource is due.
    runEnded: () => controllers.wake(),
  });
  const controllers = createControllerSupervision(ctx, {
    children: processes.controllerChildren,
    resolveWorkflow: (request) => processes.resolve(request),
    wakeRuns: () => processes.wake(),
    ...(ctx.controllerOptions ? { options: ctx.controllerOptions } : {}),
  });
  const { controllerChildren: _children, ...runs } = processes;
  const supervision: Supervision = {
    ...runs,
    controllers,
    async recover() {
      await processes.recover();
      await controllers.recover();
    },
    start() {
      controllers.start();
      processes.start();
    },
    // Runs to launch now: their workers fill the cache themselves.
    warmCompileCache: () => processes.warmCompileCache(supervision.hasPendingWork()),
    wake() {
      processes.wake();
      controllers.wake();
    },
    activeWorkerCount: () => processes.activeWorkerCount() + controllers.activeWorkerCount(),
    hasPendingWork: () => processes.hasPendingWork() || controllers.hasPendingWork(),
    shutdown: () => processes.shutdown(() => controllers.shutdown()),
  };
  return supervision;
}

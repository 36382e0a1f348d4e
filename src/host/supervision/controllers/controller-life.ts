/**
 * A controller worker's life in the host's memory, in one typed state with its transitions, like
 * a run worker's (worker-life.ts); the durable record is the `controller_workers` row:
 *
 *   phase    launching  spawned, envelope sent; no `controller.ready` yet: it holds the
 *                       start-up deadline (the kit's, disarmed when the phase ends)
 *            live       `controller.ready` named the process the host started
 *            stopping   the host stops it for `reason` (its group got SIGTERM, or SIGKILL at once
 *                       when `stuck`)
 *   blocked  the worker reported its source changed or failed to load; it exits by itself
 */
import { type ChildDeadline, enterPhase } from "../children/child-deadline.ts";

/** Why the host stops a controller worker. */
export type ControllerWorkerStop = "idle" | "repinned" | "shutdown" | "stuck" | "startup";

export type ControllerPhase =
  | { name: "launching"; startup: ChildDeadline | null }
  | { name: "live" }
  | { name: "stopping"; reason: ControllerWorkerStop };

export interface ControllerLife {
  phase: ControllerPhase;
  blocked: boolean;
}

type Worker = { life: ControllerLife };

export function launchingControllerLife(): ControllerLife {
  return { phase: { name: "launching", startup: null }, blocked: false };
}

/** `controller.ready` named the right process: true when it was awaited (launching). */
export function markControllerLive(worker: Worker): boolean {
  if (worker.life.phase.name !== "launching") return false;
  enterPhase(worker.life, { name: "live" });
  return true;
}

/** The host stops it: true when `reason` is the first (later reasons are ignored). */
export function beginControllerStop(worker: Worker, reason: ControllerWorkerStop): boolean {
  if (worker.life.phase.name === "stopping") return false;
  enterPhase(worker.life, { name: "stopping", reason });
  return true;
}

export function markBlocked(worker: Worker): void {
  worker.life.blocked = true;
}

/** Why the host stops (or stopped) it; null while it runs, or when it exited on its own. */
export function controllerStopReason(worker: Worker): ControllerWorkerStop | null {
  const { phase } = worker.life;
  return phase.name === "stopping" ? phase.reason : null;
}

/** Spawned, `controller.ready` not yet accepted, and not stopping. */
export function isControllerLaunching(worker: Worker): boolean {
  return worker.life.phase.name === "launching";
}

/** It reported its source changed or failed to load (it exits by itself). */
export function isBlocked(worker: Worker): boolean {
  return worker.life.blocked;
}

/** Live and not stopping. */
export function isControllerLive(worker: Worker): boolean {
  return worker.life.phase.name === "live";
}

/** Live, not stopping and not blocked: new reconciles may go to it. */
export function takesReconciles(worker: Worker): boolean {
  return isControllerLive(worker) && !isBlocked(worker);
}

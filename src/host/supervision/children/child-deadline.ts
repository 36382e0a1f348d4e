/**
 * The child kit's bound on one job of a child, the same for every kind: a run or controller
 * worker's start-up (until its ready message; the bound is held by its life's `launching` phase,
 * worker-life.ts and controllers/controller-life.ts, and disarmed when it leaves it), each request
 * to a source resolver (child-requests.ts), a validation exchange, the compile cache warm-up.
 * When `ms` pass before `disarm`, the kind's `expire` says what that means for its protocol (a
 * worker's records its stop reason and stops its group), then the kit cuts the channel, so the
 * kind's reading ends at once and its usual end follows.
 */
import type { SupervisedChild } from "./spawn-child.ts";

export interface ChildDeadline {
  /** True once the bound passed (the channel is cut by then). */
  readonly expired: boolean;
  disarm(): void;
}

export function armChildDeadline(
  spawned: SupervisedChild,
  ms: number,
  expire: () => void = () => {},
): ChildDeadline {
  let expired = false;
  const bounds = boundsOf(spawned);
  const timer = setTimeout(() => {
    bounds.armed.delete(timer);
    expired = true;
    expire();
    spawned.channel.destroy();
  }, ms);
  // The bound never keeps the host alive by itself (the child's pipes do while it runs).
  timer.unref();
  // A child that exited needs no bound (its reader has ended).
  if (bounds.exited) clearTimeout(timer);
  else bounds.armed.add(timer);
  return {
    get expired() {
      return expired;
    },
    disarm() {
      clearTimeout(timer);
      bounds.armed.delete(timer);
    },
  };
}

type Bounds = { armed: Set<ReturnType<typeof setTimeout>>; exited: boolean };
const childBounds = new WeakMap<SupervisedChild, Bounds>();

/**
 * The child's bounds armed now, all cleared when it exits: one exit hook per child, however many
 * bounds a long-lived one (a prepared process, step after step) is given.
 */
function boundsOf(spawned: SupervisedChild): Bounds {
  let bounds = childBounds.get(spawned);
  if (!bounds) {
    const created: Bounds = { armed: new Set(), exited: false };
    childBounds.set(spawned, bounds = created);
    void spawned.exited.then(() => {
      created.exited = true;
      for (const timer of created.armed) clearTimeout(timer);
      created.armed.clear();
    });
  }
  return bounds;
}

/** The life of a run or controller worker, whose `launching` phase holds its start-up deadline. */
type Phase = { name: string; startup?: ChildDeadline | null };

/**
 * Arms a worker's start-up deadline and hands it to its life's launching phase, which disarms it
 * when it ends (`enterPhase`); at once when that phase ended already.
 */
export function armStartupDeadline(
  spawned: SupervisedChild,
  life: { phase: Phase },
  ms: number,
  expire: () => void,
): void {
  const deadline = armChildDeadline(spawned, ms, expire);
  if (life.phase.name === "launching") life.phase.startup = deadline;
  else deadline.disarm();
}

/** Every phase change of such a life: leaving `launching` disarms its start-up deadline. */
export function enterPhase<P extends Phase>(life: { phase: P }, phase: P): void {
  if (life.phase.name === "launching") life.phase.startup?.disarm();
  life.phase = phase;
}

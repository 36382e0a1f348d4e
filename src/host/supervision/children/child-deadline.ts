/**
 * The child kit's bound on one job of a child: a source resolver's start and answer, a validation
 * exchange, the compile cache warm-up. When `ms` pass before `disarm`, the kind's `expire` says
 * what that means for its protocol, then the kit cuts the channel, so the kind's reading ends at
 * once and its usual end (retireChild) follows. A run or controller
 * worker's start-up deadline stops its group instead, with the stop reason its epoch records
 * (worker-deadlines.ts, controllers/worker-fleet.ts).
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
  const timer = setTimeout(() => {
    expired = true;
    expire();
    spawned.channel.destroy();
  }, ms);
  // The bound never keeps the host alive by itself (the child's pipes do while it runs).
  timer.unref();
  // A child that exited needs no bound (its reader has ended).
  void spawned.exited.then(() => clearTimeout(timer));
  return {
    get expired() {
      return expired;
    },
    disarm: () => clearTimeout(timer),
  };
}

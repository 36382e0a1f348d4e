/**
 * The host's idle check, on a timer: once no client, worker, wake or unsettled work has kept the
 * host busy for the idle period it stops (idle-tracker.ts). On a tick with no client and no
 * worker, retention gets its slice (retention-runner.ts), which never counts as busy: a pending
 * deadline or a controller's next reconcile keeps the host up but does no work until it is due,
 * and a host that schedules and controllers keep up for good must still prune.
 */
import type { Clock } from "../base/clock.ts";
import { createIdleTracker, idleCheckIntervalMs } from "./idle-tracker.ts";
import type { RetentionRunner } from "./retention-runner.ts";

/** Starts the check; returns its timer (cleared when the host stops). */
export function startIdleCheck(ctx: {
  clock: Clock;
  idleMs: number;
  /** False once the host is stopping. */
  running(): boolean;
  busy(): boolean;
  /** A client is connected or a worker runs: the host is working now (no retention slice). */
  working(): boolean;
  retention: RetentionRunner;
  onIdle(): void;
}): NodeJS.Timeout {
  const idle = createIdleTracker(ctx.clock, ctx.idleMs);
  return setInterval(() => {
    if (!ctx.running()) return;
    const busy = ctx.busy();
    if (idle.check(busy)) ctx.onIdle();
    else if (!ctx.working()) ctx.retention.idleTick();
  }, idleCheckIntervalMs(ctx.idleMs));
}

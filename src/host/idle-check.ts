/**
 * The host's idle check, on a timer: once no client, worker, wake or unsettled work has kept the
 * host busy for the idle period it stops (idle-tracker.ts); on an idle tick before that,
 * retention gets its slice (retention-runner.ts), which never counts as busy.
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
  retention: RetentionRunner;
  onIdle(): void;
}): NodeJS.Timeout {
  const idle = createIdleTracker(ctx.clock, ctx.idleMs);
  return setInterval(() => {
    if (!ctx.running()) return;
    const busy = ctx.busy();
    if (idle.check(busy)) ctx.onIdle();
    else if (!busy) ctx.retention.idleTick();
  }, idleCheckIntervalMs(ctx.idleMs));
}

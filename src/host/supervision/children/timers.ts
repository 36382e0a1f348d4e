/**
 * Timer sets the supervision keeps per child and per job (a run worker's deadlines, a controller
 * worker's idle wait, a reconcile's deadline): every timer of a set is cleared at once when its
 * owner ends, so nothing fires for a child that is gone.
 */

export type Timers = Set<ReturnType<typeof setTimeout>>;

/** Timers wait this much past their time: one may fire a moment before the wall clock agrees. */
export const TIMER_SLACK_MS = 5;

/** Runs `fire` after `ms` unless the set is cleared first. */
export function later(timers: Timers, ms: number, fire: () => void): ReturnType<typeof setTimeout> {
  const timer = setTimeout(() => {
    timers.delete(timer);
    fire();
  }, Math.max(0, ms));
  timers.add(timer);
  return timer;
}

export function clearAll(timers: Timers): void {
  for (const timer of timers) clearTimeout(timer);
  timers.clear();
}

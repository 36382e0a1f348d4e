/** Timer sets of the controller supervision (one per worker and per reconcile, cleared at once). */

export type Timers = Set<ReturnType<typeof setTimeout>>;

/** Timers wait this much past their time: one may fire a moment before the wall clock agrees. */
export const TIMER_SLACK_MS = 5;

/** Runs `fire` after `ms` unless the set is cleared first. */
export function later(timers: Timers, ms: number, fire: () => void): void {
  const timer = setTimeout(() => {
    timers.delete(timer);
    fire();
  }, Math.max(0, ms));
  timers.add(timer);
}

export function clearAll(timers: Timers): void {
  for (const timer of timers) clearTimeout(timer);
  timers.clear();
}

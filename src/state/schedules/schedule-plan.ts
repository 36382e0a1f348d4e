/**
 * What a due schedule does at `now`, decided from its timing, catch-up policy and the slot that
 * came due first: which slots fire, how many were missed, and the next slot. Pure: the firing
 * transaction (schedule-firing.ts) applies it.
 *
 * A slot is on time when it is at most `ON_TIME_GRACE_MS` old; an older one was missed (the host
 * was down, or the machine asleep). Catch-up `none` fires an on-time slot only, `latest` the
 * newest due slot whatever its age (one run for everything missed), `all-bounded` each due slot,
 * the newest `CATCH_UP_LIMIT` of them.
 */
import {
  CATCH_UP_LIMIT,
  type CatchUpPolicy,
  dueSlots,
  nextSlotAfter,
  ON_TIME_GRACE_MS,
  type ScheduleTiming,
} from "../../base/schedule-timing.ts";

export interface FiringPlan {
  /** Slots to fire now, oldest first. */
  fire: number[];
  /** Due slots that fire no run (missed while no host ran, beyond the policy). */
  missed: number;
  /** The next slot after now; null when the timing has none (a cron that never matches again). */
  next: number | null;
}

export function planFiring(
  timing: ScheduleTiming,
  catchUp: CatchUpPolicy,
  firstDue: number,
  now: number,
): FiringPlan {
  const due = dueSlots(timing, firstDue, now, CATCH_UP_LIMIT);
  const total = due.slots.length + due.omitted;
  const newest = due.slots.at(-1);
  let fire: number[];
  if (newest === undefined) fire = [];
  else if (catchUp === "all-bounded") fire = due.slots;
  else if (catchUp === "latest" || now - newest <= ON_TIME_GRACE_MS) fire = [newest];
  else fire = [];
  return { fire, missed: total - fire.length, next: nextSlotAfter(timing, now) };
}

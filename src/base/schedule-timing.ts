/**
 * When a schedule fires: its timing (a 5-field cron expression in a time zone, or a fixed
 * interval), validated with one message per mistake, and the slot maths the host and the state
 * layer share. Cron maths is `croner` (dependency-free); nothing here reads the clock: every
 * function takes the time it reasons about.
 *
 * Daylight saving: a cron fires at the zone's wall time. An expression whose minute and hour
 * fields have no wildcard and no step (`30 2 * * *`, `0 9-17 * * 1-5`) names wall times: one that
 * falls in a skipped hour fires once, at the first valid time after the gap, and one that occurs
 * twice fires once, at its first occurrence. An expression with a wildcard or a step in those
 * fields (`*\/15 * * * *`, `0 * * * *`) is an interval: it follows real time, so it has no slot
 * in a skipped hour and one per real occurrence of a repeated hour.
 */
import { Cron } from "croner";

export type ScheduleTiming =
  | { kind: "cron"; cron: string; timeZone: string }
  | {
    kind: "every";
    everyMs: number;
    /** Slots are `anchorAt + k * everyMs`: the time the schedule was added (or resumed). */
    anchorAt: number;
  };

/** The shortest interval: a schedule never fires more often than once a second. */
export const MIN_EVERY_MS = 1_000;
/** The longest interval (366 days). */
export const MAX_EVERY_MS = 366 * 24 * 3_600_000;
/** Missed slots `all-bounded` catch-up starts at most (the newest ones). */
export const CATCH_UP_LIMIT = 10;
/**
 * How late a slot may be applied and still count as on time rather than missed: the timer may
 * wake a little late (a busy host, a stepped clock); a host that was down longer missed it.
 */
export const ON_TIME_GRACE_MS = 60_000;

export const OVERLAP_POLICIES = ["skip", "queue", "cancel-previous"] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];
export const CATCH_UP_POLICIES = ["none", "latest", "all-bounded"] as const;
export type CatchUpPolicy = (typeof CATCH_UP_POLICIES)[number];

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `30m`, `1h30m`, `90s`, `2d`: milliseconds, or an error message naming the value. Units are s,
 * m, h and d; from 1s to 366d.
 */
export function parseEvery(text: string): { ok: true; ms: number } | { ok: false; error: string } {
  const trimmed = text.trim();
  const bad = (why: string) => ({
    ok: false as const,
    error: `Invalid interval "${text}": ${why}`,
  });
  if (!/^(\d+[smhd])+$/.test(trimmed)) {
    return bad("expected a duration like 30s, 15m, 1h30m or 2d (units s, m, h, d)");
  }
  let ms = 0;
  for (const [, amount, unit] of trimmed.matchAll(/(\d+)([smhd])/g)) {
    ms += Number(amount) * UNITS[unit!]!;
  }
  if (!Number.isSafeInteger(ms) || ms > MAX_EVERY_MS) return bad("longer than 366 days");
  if (ms < MIN_EVERY_MS) return bad("shorter than 1s");
  return { ok: true, ms };
}

/** `1h30m` for 5_400_000: the shortest text `parseEvery` reads back as `ms`. */
export function formatEvery(ms: number): string {
  let rest = ms;
  let text = "";
  for (const unit of ["d", "h", "m", "s"]) {
    const size = UNITS[unit]!;
    const count = Math.floor(rest / size);
    if (count > 0) text += `${count}${unit}`;
    rest -= count * size;
  }
  return text || "0s";
}

/** Null when `zone` is an IANA time zone this runtime knows, else why not. */
export function timeZoneProblem(zone: string): string | null {
  if (zone.trim() === "" || zone.length > 100) return `Invalid time zone "${zone}"`;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return null;
  } catch {
    return `Unknown time zone "${zone}": use an IANA name such as Europe/Berlin, America/New_York or UTC`;
  }
}

/** The zone a cron uses when none is given: this process's own (the CLI sends its user's). */
export function localTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

function cronOf(cron: string, timeZone: string): Cron {
  return new Cron(cron, {
    paused: true,
    mode: "5-part",
    timezone: timeZone,
    // Lists and ranges of hours are wall times too (Vixie cron's rule), not only single values.
    fixedTimeRule: "no-wildcard",
  });
}

/**
 * Null when `cron` is a valid 5-field expression (minute hour day-of-month month day-of-week;
 * ranges, steps, lists and month and day names) that has a next slot, else a one-line reason.
 */
export function cronProblem(cron: string, timeZone = "UTC"): string | null {
  const text = cron.trim();
  const fields = text === "" ? 0 : text.split(/\s+/).length;
  if (fields !== 5) {
    return `Invalid cron expression "${cron}": expected 5 fields (minute hour day-of-month month day-of-week), found ${fields}`;
  }
  let parsed: Cron;
  try {
    parsed = cronOf(text, timeZone);
  } catch (error) {
    const detail = error instanceof Error ? error.message.replace(/^CronPattern: /, "") : "";
    return `Invalid cron expression "${cron}": ${detail || "not a cron expression"}`;
  }
  // `0 0 30 2 *` (February 30th) parses but never fires.
  if (parsed.nextRun(new Date(0)) === null) {
    return `Invalid cron expression "${cron}": it never matches a date`;
  }
  return null;
}

/** The first slot strictly after `after` (epoch ms), or null when there is none. */
export function nextSlotAfter(timing: ScheduleTiming, after: number): number | null {
  if (timing.kind === "every") {
    if (after < timing.anchorAt) return timing.anchorAt;
    const steps = Math.floor((after - timing.anchorAt) / timing.everyMs) + 1;
    return timing.anchorAt + steps * timing.everyMs;
  }
  const next = cronOf(timing.cron, timing.timeZone).nextRun(new Date(after));
  return next === null ? null : next.getTime();
}

/**
 * The slots from `first` (a slot, already due) up to `now`, in order: at most `max` of them,
 * the newest ones, and how many older ones that left out. `first` itself counts.
 */
export function dueSlots(
  timing: ScheduleTiming,
  first: number,
  now: number,
  max: number,
): { slots: number[]; omitted: number } {
  if (timing.kind === "every") {
    if (first > now) return { slots: [], omitted: 0 };
    const count = Math.floor((now - first) / timing.everyMs) + 1;
    const kept = Math.min(count, max);
    const slots: number[] = [];
    for (let k = count - kept; k < count; k++) slots.push(first + k * timing.everyMs);
    return { slots, omitted: count - kept };
  }
  const cron = cronOf(timing.cron, timing.timeZone);
  // The newest slots first (walking back from now), then the older ones are only counted, up
  // to a cap: after a long outage of a `* * * * *` schedule the count matters, not each slot.
  const slots = cron.previousRuns(max, new Date(now + 1))
    .map((d) => d.getTime())
    .filter((slot) => slot >= first && slot <= now)
    .reverse();
  let omitted = 0;
  if (slots.length === max) {
    let at: number | null = first;
    while (at !== null && at < slots[0]! && omitted < MAX_COUNTED_OMISSIONS) {
      omitted++;
      const next = cron.nextRun(new Date(at));
      at = next === null ? null : next.getTime();
    }
  }
  return { slots, omitted };
}

/** Missed slots counted one by one at most (a longer outage reports this many). */
const MAX_COUNTED_OMISSIONS = 10_000;

/** One line for people: `cron "0 9 * * 1-5" (Europe/Berlin)` or `every 30m`. */
export function describeTiming(timing: ScheduleTiming): string {
  return timing.kind === "cron"
    ? `cron "${timing.cron}" (${timing.timeZone})`
    : `every ${formatEvery(timing.everyMs)}`;
}

/**
 * Schedule timing on a virtual clock: 5-field cron expressions (ranges, steps, lists, names),
 * intervals, wall time in a zone across both daylight-saving changes of two zones (a skipped or
 * repeated wall hour fires once), and the validation messages of every input.
 */
import { describe, expect, it } from "vitest";
import {
  cronProblem,
  dueSlots,
  formatEvery,
  nextSlotAfter,
  parseEvery,
  type ScheduleTiming,
  timeZoneProblem,
} from "../../src/base/schedule-timing.ts";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const cron = (text: string, timeZone = "UTC"): ScheduleTiming => ({
  kind: "cron",
  cron: text,
  timeZone,
});

/** The next `n` slots after `from` (ISO text), in UTC ISO. */
function slots(timing: ScheduleTiming, from: string, n: number): string[] {
  const out: string[] = [];
  let at = Date.parse(from);
  for (let i = 0; i < n; i++) {
    const next = nextSlotAfter(timing, at);
    if (next === null) break;
    out.push(iso(next)!);
    at = next;
  }
  return out;
}

describe("cron expressions (5 fields)", () => {
  it("fires at a fixed minute and hour, strictly after the given time", () => {
    expect(slots(cron("30 9 * * *"), "2026-03-02T09:30:00Z", 2)).toEqual([
      "2026-03-03T09:30:00.000Z",
      "2026-03-04T09:30:00.000Z",
    ]);
  });

  it("reads ranges and day names: weekdays at 9", () => {
    // 2026-12-04 is a Friday.
    expect(slots(cron("0 9 * * 1-5"), "2026-12-04T10:00:00Z", 3)).toEqual([
      "2026-12-07T09:00:00.000Z",
      "2026-12-08T09:00:00.000Z",
      "2026-12-09T09:00:00.000Z",
    ]);
    expect(slots(cron("0 9 * * MON-FRI"), "2026-12-04T10:00:00Z", 3))
      .toEqual(slots(cron("0 9 * * 1-5"), "2026-12-04T10:00:00Z", 3));
  });

  it("reads steps, lists and month names", () => {
    expect(slots(cron("*/20 * * * *"), "2026-01-01T00:00:00Z", 4)).toEqual([
      "2026-01-01T00:20:00.000Z",
      "2026-01-01T00:40:00.000Z",
      "2026-01-01T01:00:00.000Z",
      "2026-01-01T01:20:00.000Z",
    ]);
    expect(slots(cron("5,35 8-9/1 * * *"), "2026-01-01T00:00:00Z", 4)).toEqual([
      "2026-01-01T08:05:00.000Z",
      "2026-01-01T08:35:00.000Z",
      "2026-01-01T09:05:00.000Z",
      "2026-01-01T09:35:00.000Z",
    ]);
    expect(slots(cron("0 0 1 JAN,JUL *"), "2026-01-01T00:00:00Z", 2)).toEqual([
      "2026-07-01T00:00:00.000Z",
      "2027-01-01T00:00:00.000Z",
    ]);
    // Day of month and day of week together: either matches (cron's usual rule).
    expect(slots(cron("0 0 13 * FRI"), "2026-02-01T00:00:00Z", 3)).toEqual([
      "2026-02-06T00:00:00.000Z",
      "2026-02-13T00:00:00.000Z",
      "2026-02-20T00:00:00.000Z",
    ]);
  });

  it("refuses what is not a 5-field expression, with the reason", () => {
    expect(cronProblem("* * * * * *")).toMatch(/expected 5 fields .* found 6/);
    expect(cronProblem("")).toMatch(/found 0/);
    expect(cronProblem("61 * * * *")).toMatch(/minute: 61/);
    expect(cronProblem("0 25 * * *")).toMatch(/hour: 25/);
    expect(cronProblem("*/0 * * * *")).toMatch(/stepping/);
    expect(cronProblem("5-1 * * * *")).toMatch(/larger than/);
    expect(cronProblem("0 9 * * FUNDAY")).toMatch(/^Invalid cron expression "0 9 \* \* FUNDAY"/);
    expect(cronProblem("0 0 30 2 *")).toMatch(/never matches/);
    expect(cronProblem("0 9 * * 1-5")).toBeNull();
  });
});

describe("intervals", () => {
  it("parse and print durations from 1s to 366d", () => {
    expect(parseEvery("30m")).toEqual({ ok: true, ms: 1_800_000 });
    expect(parseEvery("1h30m")).toEqual({ ok: true, ms: 5_400_000 });
    expect(parseEvery("1s")).toEqual({ ok: true, ms: 1000 });
    expect(formatEvery(5_400_000)).toBe("1h30m");
    expect(formatEvery(90_061_000)).toBe("1d1h1m1s");
    for (
      const [text, why] of [
        ["0s", /shorter than 1s/],
        ["500ms", /expected a duration/],
        ["30", /expected a duration/],
        ["-5m", /expected a duration/],
        ["367d", /longer than 366 days/],
        ["", /expected a duration/],
      ] as const
    ) {
      const parsed = parseEvery(text);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).toMatch(why);
    }
  });

  it("fire on a grid from their anchor, whatever time is asked about", () => {
    const every: ScheduleTiming = { kind: "every", everyMs: 30_000, anchorAt: 1_000_000 };
    expect(nextSlotAfter(every, 0)).toBe(1_000_000);
    expect(nextSlotAfter(every, 1_000_000)).toBe(1_030_000);
    expect(nextSlotAfter(every, 1_045_123)).toBe(1_060_000);
  });
});

describe("time zones and daylight saving", () => {
  it("knows IANA zones and names a wrong one", () => {
    expect(timeZoneProblem("Europe/Berlin")).toBeNull();
    expect(timeZoneProblem("UTC")).toBeNull();
    expect(timeZoneProblem("Mars/Olympus")).toMatch(/Unknown time zone "Mars\/Olympus"/);
  });

  it("fires at the zone's wall time, before and after a change", () => {
    // Berlin: 09:00 is 08:00Z in winter (CET) and 07:00Z in summer (CEST).
    expect(slots(cron("0 9 * * *", "Europe/Berlin"), "2026-03-28T00:00:00Z", 2)).toEqual([
      "2026-03-28T08:00:00.000Z",
      "2026-03-29T07:00:00.000Z",
    ]);
    expect(slots(cron("0 9 * * *", "America/New_York"), "2026-11-01T00:00:00Z", 2)).toEqual([
      "2026-11-01T14:00:00.000Z",
      "2026-11-02T14:00:00.000Z",
    ]);
  });

  it("fires a wall time in the skipped hour once, at the end of the gap (spring)", () => {
    // 2026-03-29 in Berlin: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist that day.
    expect(slots(cron("30 2 * * *", "Europe/Berlin"), "2026-03-28T00:00:00Z", 3)).toEqual([
      "2026-03-28T01:30:00.000Z", // 02:30 CET
      "2026-03-29T01:00:00.000Z", // 03:00 CEST: once, right after the gap
      "2026-03-30T00:30:00.000Z", // 02:30 CEST
    ]);
    // 2026-03-08 in New York: 02:00 EST jumps to 03:00 EDT.
    expect(slots(cron("15 2 * * *", "America/New_York"), "2026-03-07T12:00:00Z", 3)).toEqual([
      "2026-03-08T07:00:00.000Z", // 03:00 EDT
      "2026-03-09T06:15:00.000Z",
      "2026-03-10T06:15:00.000Z",
    ]);
  });

  it("fires a wall time in the repeated hour once, at its first occurrence (autumn)", () => {
    // 2026-10-25 in Berlin: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
    expect(slots(cron("30 2 * * *", "Europe/Berlin"), "2026-10-24T12:00:00Z", 3)).toEqual([
      "2026-10-25T00:30:00.000Z", // 02:30 CEST, not again at 01:30Z (02:30 CET)
      "2026-10-26T01:30:00.000Z",
      "2026-10-27T01:30:00.000Z",
    ]);
    // A range of hours names wall times too: each hour of 1-3 once.
    expect(slots(cron("0 1-3 * * *", "America/New_York"), "2026-11-01T00:00:00Z", 4)).toEqual([
      "2026-11-01T05:00:00.000Z", // 01:00 EDT
      "2026-11-01T07:00:00.000Z", // 02:00 EST (01:00 EST, the repeat, does not fire)
      "2026-11-01T08:00:00.000Z", // 03:00 EST
      "2026-11-02T06:00:00.000Z",
    ]);
  });

  it("keeps an interval expression in real time through both changes", () => {
    // Every 30 minutes follows the clock, not the wall: no slot in the gap, each real half hour.
    expect(slots(cron("*/30 * * * *", "Europe/Berlin"), "2026-03-29T00:00:00Z", 3)).toEqual([
      "2026-03-29T00:30:00.000Z",
      "2026-03-29T01:00:00.000Z",
      "2026-03-29T01:30:00.000Z",
    ]);
    expect(slots(cron("*/30 * * * *", "Europe/Berlin"), "2026-10-25T00:00:00Z", 3)).toEqual([
      "2026-10-25T00:30:00.000Z",
      "2026-10-25T01:00:00.000Z",
      "2026-10-25T01:30:00.000Z",
    ]);
  });
});

describe("due slots after a gap", () => {
  it("lists the newest ones up to the bound and counts the rest", () => {
    const t = cron("*/10 * * * *");
    const first = Date.parse("2026-01-01T00:00:00Z");
    const due = dueSlots(t, first, Date.parse("2026-01-01T01:05:00Z"), 3);
    expect(due.slots.map(iso)).toEqual([
      "2026-01-01T00:40:00.000Z",
      "2026-01-01T00:50:00.000Z",
      "2026-01-01T01:00:00.000Z",
    ]);
    expect(due.omitted).toBe(4);
    const every: ScheduleTiming = { kind: "every", everyMs: 60_000, anchorAt: 0 };
    expect(dueSlots(every, 60_000, 600_000, 10)).toEqual({
      slots: [
        60_000,
        120_000,
        180_000,
        240_000,
        300_000,
        360_000,
        420_000,
        480_000,
        540_000,
        600_000,
      ],
      omitted: 0,
    });
    expect(dueSlots(every, 60_000, 60_000 * 1000, 2).omitted).toBe(998);
  });
});

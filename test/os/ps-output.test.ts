import { describe, expect, it } from "vitest";
import { parseLstart, parsePsOutput } from "../../src/os/ps-output.ts";

// `ps -A -o pid=,ppid=,pgid=,stat=,rss=,lstart=` as macOS prints it: right-aligned numbers,
// BSD state letters with their flags (s session leader, + foreground, < high priority, N nice,
// U uninterruptible, I idle, Z zombie), `lstart` in the C locale's `%c`.
const MACOS_C_LOCALE = [
  "    1     0     1 Ss    13456 Sat Dec  5 10:21:32 2026",
  "  512     1   512 S+     2240 Sat Dec  5 10:21:40 2026",
  "  640   512   640 U<s   91008 Sun Dec  6 07:09:26 2026",
  "  641   640   640 IN       16 Sun Dec  6 07:09:26 2026",
  "98765   640 98765 Z         0 Sun Dec  6 23:59:59 2026",
].join("\n") + "\n";

// The same processes where the locale puts the day before the month (en_GB and most of Europe,
// with English names once LC_ALL=C is ignored by a wrapper): `Sat  5 Dec 10:21:32 2026`.
const DAY_FIRST_LOCALE = [
  "    1     0     1 Ss    13456 Sat  5 Dec 10:21:32 2026",
  "  512     1   512 S+     2240 Sat  5 Dec 10:21:40 2026",
  "  640   512   640 U<s   91008 Sun  6 Dec 07:09:26 2026",
  "  641   640   640 IN       16 Sun  6 Dec 07:09:26 2026",
  "98765   640 98765 Z         0 Sun  6 Dec 23:59:59 2026",
].join("\n");

// procps-ng on Linux (`ps` forced by PI_WORKFLOWS_PROCESS_BACKEND=ps): Linux state flags.
const PROCPS = "  4242  4200  4242 Sl+  123456 Sun Dec  6 07:09:26 2026\n" +
  "  4243  4242  4242 S<l     512 Sun Dec  6 07:09:27 2026\n";

describe("parsePsOutput()", () => {
  it("reads macOS rows in the C locale", () => {
    const rows = parsePsOutput(MACOS_C_LOCALE);
    expect(rows).toHaveLength(5);
    expect(rows[0]).toEqual({
      pid: 1,
      ppid: 0,
      pgrp: 1,
      state: "S",
      rssBytes: 13456 * 1024,
      startTime: String(Date.UTC(2026, 11, 5, 10, 21, 32) / 1000),
    });
    expect(rows.map((r) => r.state)).toEqual(["S", "S", "U", "I", "Z"]);
    expect(rows[4]).toMatchObject({ pid: 98765, ppid: 640, pgrp: 98765, rssBytes: 0 });
  });

  it("reads the day-first locale to the same start seconds", () => {
    expect(parsePsOutput(DAY_FIRST_LOCALE)).toEqual(parsePsOutput(MACOS_C_LOCALE));
  });

  it("reads procps rows", () => {
    const rows = parsePsOutput(PROCPS);
    expect(rows.map((r) => [r.pid, r.ppid, r.pgrp, r.state])).toEqual([
      [4242, 4200, 4242, "S"],
      [4243, 4242, 4242, "S"],
    ]);
    expect(Number(rows[1].startTime) - Number(rows[0].startTime)).toBe(1);
  });

  it("skips blank lines and names an unreadable one", () => {
    expect(parsePsOutput("\n\n")).toEqual([]);
    expect(() => parsePsOutput("  PID  PPID  PGID STAT   RSS STARTED\n")).toThrow(
      /unreadable ps line: " {2}PID {2}PPID/,
    );
    expect(() => parsePsOutput("1 0 1 Ss 10 Sam 5 Dez 10:21:32 2026")).toThrow(/unreadable/);
    expect(() => parsePsOutput("1 0 1 Ss 10")).toThrow(/unreadable/);
  });
});

describe("parseLstart()", () => {
  it("reads both orders, with or without the weekday, as UTC", () => {
    const expected = Date.UTC(2026, 0, 9, 3, 4, 5) / 1000;
    expect(parseLstart("Fri Jan  9 03:04:05 2026")).toBe(expected);
    expect(parseLstart("Fri  9 Jan 03:04:05 2026")).toBe(expected);
    expect(parseLstart("Jan 9 03:04:05 2026")).toBe(expected);
    expect(parseLstart("9 Jan 03:04:05 2026")).toBe(expected);
  });

  it("refuses what is not a start time", () => {
    for (
      const text of [
        "",
        "Fri Foo  9 03:04:05 2026",
        "Fri Jan 32 03:04:05 2026",
        "Fri Jan  9 24:04:05 2026",
        "Fri Jan  9 03:04 2026",
        "Fri Jan  9 03:04:05 26",
        "Fri Jan  9 03:04:05 2026 extra",
      ]
    ) {
      expect(parseLstart(text), text).toBeNull();
    }
  });
});

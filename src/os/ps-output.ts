/**
 * Reading the output of `ps -A -o pid=,ppid=,pgid=,stat=,rss=,lstart=`, the columns the `ps`
 * process backend asks for on macOS, the BSDs and Linux alike. `lstart` (the full start time)
 * comes last because it holds spaces. It is strftime's `%c`: `Sun Dec  6 07:09:26 2026` in the C
 * locale the backend runs `ps` in, `Sun  6 Dec 07:09:26 2026` where a locale puts the day first;
 * both are read. `ps` runs with `TZ=UTC0`, so the time is UTC and a start second never moves
 * with daylight saving or a changed time zone.
 */
import type { ProcessStat } from "./process-table.ts";

export interface PsRow extends ProcessStat {
  /** Resident set size in bytes (`rss` is KiB on every `ps`). */
  rssBytes: number;
}

/** The `-o` list: `=` after each name leaves the header line out. */
export const PS_COLUMNS = "pid=,ppid=,pgid=,stat=,rss=,lstart=";

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

const LINE = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(.+?)\s*$/;

/** Every row of the output; a line this reader cannot read throws, naming the line. */
export function parsePsOutput(text: string): PsRow[] {
  const rows: PsRow[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const match = LINE.exec(line);
    const start = match ? parseLstart(match[6]) : null;
    if (!match || start === null) {
      throw new SyntaxError(`unreadable ps line: ${JSON.stringify(line.slice(0, 120))}`);
    }
    rows.push({
      pid: Number(match[1]),
      ppid: Number(match[2]),
      pgrp: Number(match[3]),
      state: match[4][0],
      rssBytes: Number(match[5]) * 1024,
      startTime: String(start),
    });
  }
  return rows;
}

/**
 * An `lstart` value as Unix seconds, read as UTC: `[weekday] month day hh:mm:ss year` or
 * `[weekday] day month hh:mm:ss year` with English month names; null when it is neither.
 */
export function parseLstart(text: string): number | null {
  const tokens = text.trim().split(/\s+/);
  if (tokens.length === 5) tokens.shift(); // the weekday
  if (tokens.length !== 4) return null;
  const [a, b, time, yearText] = tokens;
  const month = monthIndex(a) ?? monthIndex(b);
  const dayText = monthIndex(a) === null ? a : b;
  const clock = /^(\d{1,2}):(\d{2}):(\d{2})$/.exec(time);
  if (month === null || !/^\d{1,2}$/.test(dayText) || !clock || !/^\d{4}$/.test(yearText)) {
    return null;
  }
  const day = Number(dayText);
  const [hours, minutes, seconds] = [Number(clock[1]), Number(clock[2]), Number(clock[3])];
  if (day < 1 || day > 31 || hours > 23 || minutes > 59 || seconds > 60) return null;
  return Date.UTC(Number(yearText), month, day, hours, minutes, seconds) / 1000;
}

function monthIndex(token: string): number | null {
  const index = MONTHS.indexOf(token.slice(0, 3).toLowerCase());
  return index >= 0 && /^[A-Za-z]{3,}\.?$/.test(token) ? index : null;
}

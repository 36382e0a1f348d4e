/**
 * A step's own output on disk: what a shell node's command, or an action's or compute's code,
 * printed while one attempt ran, in the user-only workers directory of the state dir
 * (`<stateDir>/workers/step-<attemptId>.<k>.out|err`). The worker writes it as it comes
 * (worker/step-output.ts, secrets already redacted); the host reads it for `run.logs` and the
 * last output line of a running step, the viewer for the same line. Each stream is a chain of
 * numbered segments of at most `STEP_SEGMENT_BYTES`; the writer keeps the last two, so the
 * newest output is always there and a reader that fell behind learns it skipped some.
 * The files share the captured-output budget (host option maxWorkerLogsMb) and go with it.
 */
import { Buffer } from "node:buffer";
import { closeSync, openSync, readdirSync, readSync, statSync } from "node:fs";
import { join } from "node:path";

export type StepStream = "stdout" | "stderr";

export const STEP_SEGMENT_BYTES = 256 * 1024;

/** Where a reader is in a stream: a segment number and a byte offset in it. */
export interface StepCursor {
  segment: number;
  offset: number;
}

/** What a read returns: text (whole UTF-8 characters), where to go on, and whether bytes were lost. */
export interface StepChunk {
  text: string;
  next: StepCursor;
  /** Output between the cursor and `text` was rotated away before it was read. */
  skipped: boolean;
}

const EXT: Record<StepStream, string> = { stdout: "out", stderr: "err" };

/**
 * The file name stem of a run worker epoch's own output; its headless Pi's output tails are
 * `<stem>-pi<n>.out|err` beside it.
 */
export function epochLogStem(workerEpoch: string): string {
  return workerEpoch.replace(/[^A-Za-z0-9_.-]/g, "_");
}

/** The file name stem of an attempt's output (attempt ids are UUIDs; anything else is escaped). */
export function stepOutputStem(attemptId: string): string {
  return `step-${attemptId.replace(/[^A-Za-z0-9_-]/g, "_")}`;
}

export function stepSegmentPath(
  dir: string,
  attemptId: string,
  stream: StepStream,
  segment: number,
): string {
  return join(dir, `${stepOutputStem(attemptId)}.${segment}.${EXT[stream]}`);
}

/** The segment numbers that exist for one stream, oldest first (empty: nothing printed). */
export function stepSegments(dir: string, attemptId: string, stream: StepStream): number[] {
  const prefix = `${stepOutputStem(attemptId)}.`;
  const suffix = `.${EXT[stream]}`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix) || !name.endsWith(suffix)) continue;
    const middle = name.slice(prefix.length, name.length - suffix.length);
    if (/^[0-9]{1,9}$/.test(middle)) found.push(Number(middle));
  }
  return found.sort((a, b) => a - b);
}

/**
 * Reads one stream of an attempt. Without `from`: the last `maxBytes` that are kept (a tail).
 * With `from`: up to `maxBytes` from there on. Never splits a UTF-8 character: the cursor stops
 * before an incomplete one, which the next read returns whole.
 */
export function readStepOutput(
  dir: string,
  attemptId: string,
  stream: StepStream,
  from: StepCursor | null,
  maxBytes: number,
): StepChunk {
  const segments = stepSegments(dir, attemptId, stream);
  if (segments.length === 0) {
    return { text: "", next: from ?? { segment: 0, offset: 0 }, skipped: false };
  }
  const sizes = segments.map((k) => sizeOf(stepSegmentPath(dir, attemptId, stream, k)));
  let start: StepCursor;
  let skipped = false;
  let skipLeading = false;
  if (from === null) {
    // Walk back from the end until maxBytes are covered.
    let i = segments.length - 1;
    let need = maxBytes;
    while (i > 0 && sizes[i] < need) need -= sizes[i--];
    start = { segment: segments[i], offset: Math.max(0, sizes[i] - need) };
    skipLeading = start.offset > 0;
  } else if (from.segment < segments[0]) {
    start = { segment: segments[0], offset: 0 };
    skipped = true;
  } else {
    start = from;
  }
  const parts: Buffer[] = [];
  let budget = maxBytes;
  let cursor = start;
  for (let i = segments.indexOf(start.segment); i >= 0 && i < segments.length; i++) {
    const k = segments[i];
    const offset = k === start.segment ? start.offset : 0;
    const size = sizes[i];
    if (offset >= size) {
      cursor = { segment: k, offset: size };
      continue;
    }
    const take = Math.min(size - offset, budget);
    const bytes = readFileRange(stepSegmentPath(dir, attemptId, stream, k), offset, take);
    const whole = bytes.subarray(0, completeLength(bytes));
    parts.push(whole);
    budget -= whole.length;
    cursor = { segment: k, offset: offset + whole.length };
    if (whole.length < size - offset || budget <= 0) break;
  }
  let text = Buffer.concat(parts);
  // A tail that starts inside a character drops its continuation bytes.
  if (skipLeading) {
    let lead = 0;
    while (lead < text.length && (text[lead] & 0xc0) === 0x80) lead++;
    text = text.subarray(lead);
  }
  return { text: text.toString("utf8"), next: cursor, skipped };
}

/**
 * The last line a running attempt printed, on either stream (the one written last), without
 * control characters and cut to `maxChars`; null when it printed nothing yet.
 */
const STDERR_LEAD_MS = 50;

export function lastStepLine(dir: string, attemptId: string, maxChars = 200): string | null {
  let newest: { path: string; mtime: number; size: number } | null = null;
  for (const stream of ["stdout", "stderr"] as const) {
    const segments = stepSegments(dir, attemptId, stream);
    if (segments.length === 0) continue;
    const path = stepSegmentPath(dir, attemptId, stream, segments.at(-1)!);
    try {
      const stat = statSync(path);
      // The worker reads the two pipes in whatever order they get ready, and file times are
      // coarse: stderr wins only when it is clearly newer.
      if (stat.size > 0 && (newest === null || stat.mtimeMs > newest.mtime + STDERR_LEAD_MS)) {
        newest = { path, mtime: stat.mtimeMs, size: stat.size };
      }
    } catch {
      // rotated away meanwhile
    }
  }
  if (newest === null) return null;
  const window = 4096;
  const bytes = readFileRange(newest.path, Math.max(0, newest.size - window), window);
  const lines = bytes.toString("utf8").split(/\r?\n|\r/)
    // deno-lint-ignore no-control-regex
    .map((line) => line.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, "").replace(/[\x00-\x1f\x7f]/g, ""))
    .filter((line) => line.trim() !== "");
  const last = lines.at(-1);
  if (last === undefined) return null;
  return last.length > maxChars ? `${last.slice(0, maxChars - 1)}…` : last;
}

export function formatStepCursor(cursor: StepCursor): string {
  return `${cursor.segment}:${cursor.offset}`;
}

/** A cursor as `formatStepCursor` wrote it; null for anything else. */
export function parseStepCursor(text: string): StepCursor | null {
  const match = /^([0-9]{1,9}):([0-9]{1,12})$/.exec(text);
  return match ? { segment: Number(match[1]), offset: Number(match[2]) } : null;
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** Up to `length` bytes of `path` from `offset`; empty when it cannot be read. */
export function readFileRange(path: string, offset: number, length: number): Buffer {
  if (length <= 0) return Buffer.alloc(0);
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return Buffer.alloc(0);
  }
  try {
    const buffer = Buffer.alloc(length);
    let got = 0;
    while (got < length) {
      const n = readSync(fd, buffer, got, length - got, offset + got);
      if (n === 0) break;
      got += n;
    }
    return buffer.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

/** The length of `bytes` without an incomplete UTF-8 character at its end. */
function completeLength(bytes: Buffer): number {
  let i = bytes.length - 1;
  let back = 0;
  while (i >= 0 && back < 4 && (bytes[i] & 0xc0) === 0x80) {
    i--;
    back++;
  }
  if (i < 0) return bytes.length;
  const lead = bytes[i];
  const want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return bytes.length - i >= want ? bytes.length : i;
}

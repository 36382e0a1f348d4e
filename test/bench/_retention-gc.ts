/**
 * V8's garbage collections against the retention pass's transactions: a slow transaction's time
 * put down to a pause of the collector inside it.
 */
import { constants as perfConstants } from "node:perf_hooks";
import { round } from "./_figures.ts";

export const GC_KINDS: Record<number, string> = {
  [perfConstants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [perfConstants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [perfConstants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb",
};

/** The collector's time inside [start, end] (ms). */
export function gcOverlap(
  start: number,
  end: number,
  gcs: readonly { start: number; end: number }[],
) {
  let ms = 0;
  for (const gc of gcs) ms += Math.max(0, Math.min(end, gc.end) - Math.max(start, gc.start));
  return ms;
}

/**
 * The collector's pauses inside the pass's transactions (`spans`: start, end pairs in order):
 * their sum, the longest inside one transaction, and the transactions with 5 ms or more of them.
 */
export function gcInside(
  spans: readonly number[],
  gcs: readonly { start: number; end: number; kind: number }[],
) {
  const sorted = [...gcs].sort((a, b) => a.start - b.start);
  let totalMs = 0;
  let maxMs = 0;
  let over5ms = 0;
  let g = 0;
  for (let i = 0; i < spans.length; i += 2) {
    const [start, end] = [spans[i], spans[i + 1]];
    while (g < sorted.length && sorted[g].end < start) g++;
    let ms = 0;
    for (let k = g; k < sorted.length && sorted[k].start <= end; k++) {
      ms += Math.max(0, Math.min(end, sorted[k].end) - Math.max(start, sorted[k].start));
    }
    totalMs += ms;
    maxMs = Math.max(maxMs, ms);
    if (ms >= 5) over5ms++;
  }
  return {
    collections: gcs.length,
    totalMs: round(totalMs),
    maxMs: round(maxMs),
    over5ms,
    longestPauseMs: round(Math.max(0, ...gcs.map((gc) => gc.end - gc.start))),
    // Per kind (minor: a scavenge of the young generation; major: mark-compact; incremental:
    // a step of incremental marking; weakcb: weak callbacks): how many and the longest.
    byKind: Object.fromEntries([...new Set(gcs.map((gc) => gc.kind))].map((kind) => {
      const own = gcs.filter((gc) => gc.kind === kind);
      return [GC_KINDS[kind] ?? String(kind), {
        n: own.length,
        maxMs: round(Math.max(...own.map((gc) => gc.end - gc.start))),
      }];
    })),
  };
}

/**
 * What V8's heap did inside a measured window: bytes allocated, collections by kind, their pauses,
 * and the young generation's size when the window opened. A short window's CPU time swings with
 * that size (V8 grows and shrinks it from what ran before: 1 MB means about three times the
 * scavenges of 8 MB for the same allocation), so a CPU figure is read beside these; the bytes
 * allocated and the collections' count do not depend on the machine's load.
 */
import { constants, PerformanceObserver } from "node:perf_hooks";
import v8 from "node:v8";

export interface HeapFigures {
  /** Bytes allocated on the JS heap in the window (null: the runtime does not count them). */
  allocatedBytes: number | null;
  scavenges: number;
  /** Full (mark-compact) collections, incremental ones included. */
  markCompacts: number;
  /** The main thread's time in collections (concurrent marking on helper threads is not in it). */
  gcPauseMs: number;
  /** The young generation's size when the window opened. */
  youngGenerationMb: number;
}

/** Opens a window now; `end()` closes it and returns its figures. */
export function heapWindow(): { end(): HeapFigures } {
  const seen = { scavenges: 0, markCompacts: 0, pauseMs: 0 };
  const count = (entries: readonly { duration: number; detail?: unknown }[]) => {
    for (const entry of entries) {
      const kind = (entry.detail as { kind?: number } | undefined)?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) seen.scavenges++;
      else if (
        kind === constants.NODE_PERFORMANCE_GC_MAJOR ||
        kind === constants.NODE_PERFORMANCE_GC_INCREMENTAL
      ) seen.markCompacts++;
      seen.pauseMs += entry.duration;
    }
  };
  const observer = new PerformanceObserver((list) => count(list.getEntries()));
  observer.observe({ entryTypes: ["gc"] });
  const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
  const allocatedAtStart = allocatedBytes();
  return {
    end() {
      const allocatedAtEnd = allocatedBytes();
      // Entries still queued are delivered now, not after the window's figures are taken.
      count(observer.takeRecords());
      observer.disconnect();
      return {
        allocatedBytes: allocatedAtStart === null || allocatedAtEnd === null
          ? null
          : allocatedAtEnd - allocatedAtStart,
        scavenges: seen.scavenges,
        markCompacts: seen.markCompacts,
        gcPauseMs: seen.pauseMs,
        youngGenerationMb: Math.round(
          ((young?.space_available_size ?? 0) +
            (young?.space_used_size ?? 0)) / 2 ** 20 * 10,
        ) / 10,
      };
    },
  };
}

/** V8's running count of bytes allocated, or null on a runtime that does not keep it. */
function allocatedBytes(): number | null {
  const stats = v8.getHeapStatistics() as v8.HeapInfo & { total_allocated_bytes?: number };
  return typeof stats.total_allocated_bytes === "number" ? stats.total_allocated_bytes : null;
}

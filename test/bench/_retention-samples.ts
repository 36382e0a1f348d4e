/**
 * The retention benchmark's samples and per-transaction figures: kept outside the collector's
 * heap as the pass goes, and the split of a transaction's time it reports.
 */
import type { TracedStatement } from "./_statement-trace.ts";
import { percentile, round } from "./_figures.ts";

/** A transaction's time and its split (ms): on a CPU, in the run queue, blocked. */
export interface TransactionSplit {
  ms: number;
  commitMs: number;
  cpuMs: number;
  runQueueMs: number;
  blockedMs: number;
  /** The first transaction after one of the pass's checkpoints: it restarts the WAL, whose
   * header SQLite syncs (at any `synchronous` but OFF) under the write lock. */
  restartsWal: boolean;
}

/** A traced transaction (`--trace-ms`). */
export interface Traced extends TransactionSplit {
  phase: string;
  gcMs?: number;
  start: number;
  io: { readBytes: number; writeBytes: number; reads: number; writes: number };
  statements: TracedStatement[];
}

/** Keeps the `size` entries with the most `key` (a short sorted list). */
export function keepTop(list: Traced[], entry: Traced, key: (t: Traced) => number, size = 8): void {
  if (list.length === size && key(entry) <= key(list[size - 1])) return;
  list.push(entry);
  list.sort((a, b) => key(b) - key(a));
  if (list.length > size) list.pop();
}

/**
 * Samples recorded as the pass goes, kept in a typed array's buffer (outside the collector's
 * heap): plain arrays of 100,000 numbers would grow the old generation as the pass goes, and a
 * collection of it pauses the thread inside whichever transaction it lands in: the benchmark's
 * own, not the host's.
 */
export class Samples {
  #buffer = new Float64Array(4096);
  n = 0;
  push(value: number): void {
    if (this.n === this.#buffer.length) {
      const next = new Float64Array(this.n * 2);
      next.set(this.#buffer);
      this.#buffer = next;
    }
    this.#buffer[this.n++] = value;
  }
  values(): number[] {
    return Array.from(this.#buffer.subarray(0, this.n));
  }
}

/** p50, p99 and max of the samples. */
export function spread(samples: Samples): { p50: number; p99: number; max: number } {
  const values = samples.values();
  return {
    p50: round(percentile(values, 50)),
    p99: round(percentile(values, 99)),
    max: round(values.reduce((a, b) => Math.max(a, b), 0)),
  };
}

/** One phase's transactions, as the benchmark sees them. */
export interface PhaseFigures {
  lockMs: Samples;
  blockedMs: Samples;
  over20: number;
  blocked5: { n: number; restartsWal: number };
  mostBlocked: TransactionSplit;
}

export function newPhaseFigures(): PhaseFigures {
  return {
    lockMs: new Samples(),
    blockedMs: new Samples(),
    over20: 0,
    blocked5: { n: 0, restartsWal: 0 },
    mostBlocked: { ms: 0, commitMs: 0, cpuMs: 0, runQueueMs: 0, blockedMs: 0, restartsWal: false },
  };
}

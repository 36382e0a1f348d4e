/** Figures several benchmarks share: nearest-rank percentiles and a bare `node` start. */
import { spawn } from "node:child_process";
import process from "node:process";
import v8 from "node:v8";
import vm from "node:vm";

/** The nearest-rank `p`th percentile (`p` from 0 to 100) of `values`. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Rounded to tenths. */
export const round = (n: number) => Math.round(n * 10) / 10;

/** Median and p95, in tenths. */
export const stats = (values: number[]) => ({
  median: round(percentile(values, 50)),
  p95: round(percentile(values, 95)),
});

/** Milliseconds for `node -e 0` to start and exit: the floor of any child process here. */
export function bareNode(): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
    child.on("error", reject);
    child.on("exit", () => resolve(performance.now() - start));
  });
}

/**
 * `--smoke`: the short mode CI runs after the tests (small sizes, one repeat). It proves that a
 * bench still runs and prints every field it documents; its figures mean nothing.
 */
export const smoke = process.argv.includes("--smoke");

/** The bench's own arguments, without `--smoke`. */
export const benchArgs = process.argv.slice(2).filter((a) => a !== "--smoke");

/** `full` normally, `short` under `--smoke`. */
export const bySize = <T>(full: T, short: T): T => smoke ? short : full;

/** How long a raw-commit baseline measures (ms): 2 s, a tenth of it under `--smoke`. */
export const RAW_COMMIT_MS = bySize(2_000, 200);

/**
 * A full garbage collection now, so a measured phase pays only for its own garbage: what an
 * earlier phase left (a faster earlier phase leaves more of it uncollected) would otherwise be
 * collected, and billed, inside the window that happens to follow it.
 */
export function collectGarbage(): void {
  v8.setFlagsFromString("--expose-gc");
  (vm.runInNewContext("gc") as () => void)();
}

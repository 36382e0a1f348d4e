/**
 * The `progress` update contract (`pi-workflows.progress.v1` data: completed, total?, unit?,
 * label?) and the rate and ETA derived from it: shared by the engine, which checks what nodes
 * publish, and by clients that show progress (the Pi widget), which must not load the engine.
 */
export const PROGRESS_SCHEMA = "pi-workflows.progress.v1";

/** `data` of a `progress` update. */
export interface ProgressData {
  schema: typeof PROGRESS_SCHEMA;
  completed: number;
  total?: number;
  unit?: string;
  label?: string;
}

/** A progress observation at a time. */
export interface ProgressSample {
  at: number;
  completed: number;
  total?: number;
}

/** Rate (units per second) and ETA derived from the first and last samples. */
export function estimateProgress(
  samples: readonly ProgressSample[],
): { ratePerSecond: number | null; etaMs: number | null; fraction: number | null } {
  const last = samples.at(-1);
  if (!last) return { ratePerSecond: null, etaMs: null, fraction: null };
  const fraction = last.total && last.total > 0 ? Math.min(1, last.completed / last.total) : null;
  const first = samples[0];
  const dt = last.at - first.at;
  const done = last.completed - first.completed;
  if (dt <= 0 || done <= 0) return { ratePerSecond: null, etaMs: null, fraction };
  const ratePerSecond = done / (dt / 1000);
  const etaMs = last.total !== undefined
    ? Math.max(0, ((last.total - last.completed) / ratePerSecond) * 1000)
    : null;
  return { ratePerSecond, etaMs, fraction };
}

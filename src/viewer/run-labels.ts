/** How a run's state, age and progress read in the list and the detail header. */
import { formatAge, formatDuration, type Style } from "../render/mod.ts";
import type { RunRow } from "../state/viewer-queries.ts";
import type { ProgressRow } from "../state/viewer-step-queries.ts";

export function runStateLabel(run: RunRow): { glyph: string; word: string; style: Style } {
  if (run.blockedReason) return { glyph: "!", word: "blocked", style: "warn" };
  if (run.paused && run.state !== "completed") return { glyph: "‖", word: "paused", style: "warn" };
  switch (run.state) {
    case "queued":
      return { glyph: "·", word: "queued", style: "muted" };
    case "running":
      return { glyph: "◐", word: "running", style: "running" };
    case "waiting":
      return { glyph: "⏸", word: "waiting", style: "waiting" };
    case "completed":
      return { glyph: "✓", word: "completed", style: "ok" };
    case "cancelled":
      return { glyph: "⊘", word: "cancelled", style: "warn" };
    case "timed_out":
      return { glyph: "✗", word: "timed out", style: "failed" };
    default:
      return { glyph: "✗", word: run.state, style: "failed" };
  }
}

/** Time since the run was created (`5m ago`), and how long it ran or has been running. */
export function runTimes(run: RunRow, now: number): { age: string; elapsed: string } {
  return {
    age: formatAge(run.createdAt, now),
    elapsed: formatDuration((run.finishedAt ?? now) - run.createdAt),
  };
}

/**
 * `3/10 ETA 20s` from the open attempt's latest progress update: the rate since that attempt
 * started, applied to what is left. Null when the run publishes no usable progress.
 */
export function progressText(
  run: RunRow,
  rows: readonly ProgressRow[] | undefined,
  now: number,
): string | null {
  if (!rows || rows.length === 0) return null;
  const latest = [...rows].sort((a, b) => b.updatedAt - a.updatedAt)[0];
  if (latest.completed === null) return null;
  const done = latest.completed;
  const total = latest.total;
  const head = total !== null ? `${done}/${total}` : `${done}`;
  const unit = latest.label ? ` ${latest.label}` : "";
  if (total === null || run.openStartedAt === null || done <= 0 || done >= total) {
    return `${head}${unit}`;
  }
  const spent = Math.max(0, latest.updatedAt - run.openStartedAt);
  const eta = (spent / done) * (total - done) - Math.max(0, now - latest.updatedAt);
  return `${head}${unit} ETA ${formatDuration(Math.max(0, eta))}`;
}

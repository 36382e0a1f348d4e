/** Times for people: `3m ago`, `in 10m`, and precise durations (`1.2s`, `3m05s`). */
export { formatDuration as duration } from "../render/format.ts";

/** A rounded span: `850 ms`, `42s`, `3m`, `5h`, `2d`. */
export function roughSpan(ms: number): string {
  const v = Math.max(0, Math.round(ms));
  if (v < 1000) return `${v} ms`;
  const s = Math.round(v / 1000);
  if (s < 120) return `${s}s`;
  const m = Math.round(s / 60);
  if (m < 120) return `${m}m`;
  const h = Math.round(m / 60);
  return h < 48 ? `${h}h` : `${Math.round(h / 24)}d`;
}

/** `3m ago` or `in 3m`. */
export function relative(at: number, now: number): string {
  const delta = at - now;
  return delta >= 0 ? `in ${roughSpan(delta)}` : `${roughSpan(-delta)} ago`;
}

/** An absolute time with how far it is from now (`2026-01-01T10:00:00.000Z (in 5m)`). */
export function when(at: number, now: number): string {
  return `${new Date(at).toISOString()} (${relative(at, now)})`;
}

/** Times for people: `3m ago`, `in 10m`, and precise durations (`1.2s`, `3m05s`). */
import { formatAge } from "../render/format.ts";

export { formatDuration as duration } from "../render/format.ts";

/** `3m ago` or `in 3m`. */
export const relative = formatAge;

/** An absolute time with how far it is from now (`2026-01-01T10:00:00.000Z (in 5m)`). */
export function when(at: number, now: number): string {
  return `${new Date(at).toISOString()} (${relative(at, now)})`;
}

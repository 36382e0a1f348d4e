/**
 * Keeps a read answer inside one protocol message (1 MiB). Pages of attempts, events and runs
 * are cut to what fits beside the fixed part of the answer, so a run of any length, or a list of
 * any size, can still be inspected, a page at a time, with a cursor.
 */
import { MAX_FRAME_BYTES } from "../protocol/framing.ts";

/** Bytes an answer's receipt may take; the rest of the frame is the response envelope. */
export const ANSWER_BUDGET_BYTES = MAX_FRAME_BYTES - 16 * 1024;

/** UTF-8 bytes of `value` as JSON (canonical JSON has the same length). */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");
}

/** The longest prefix of `items` whose JSON (with separators) fits in `budget` bytes. */
export function prefixWithin<T>(
  items: readonly T[],
  budget: number,
): { items: T[]; bytes: number } {
  let bytes = 0;
  let count = 0;
  for (const item of items) {
    const size = jsonBytes(item) + 1;
    if (bytes + size > budget) break;
    bytes += size;
    count++;
  }
  return { items: items.slice(0, count), bytes };
}

/** The longest suffix of `items` that fits (the newest, when items are oldest first). */
export function suffixWithin<T>(
  items: readonly T[],
  budget: number,
): { items: T[]; bytes: number } {
  const { items: kept, bytes } = prefixWithin([...items].reverse(), budget);
  return { items: kept.reverse(), bytes };
}

/** Durable JSON values: canonical text, bounded to 1 MiB each. */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { ValueTooLargeError } from "./errors.ts";
import { fastCanonicalJson } from "../protocol/fast-canonical-json.ts";

/** Largest canonical JSON text stored in one column (matches the 1 MiB message limit). */
export const MAX_VALUE_BYTES = 1024 * 1024;

/** Canonical JSON of `value` for column `field`; throws `ValueTooLargeError` past 1 MiB. */
export function encodeValue(field: string, value: unknown): string {
  const text = value === undefined
    ? "null"
    : canonicalAsIs(value, 0)
    ? JSON.stringify(value)
    : fastCanonicalJson(value);
  // Cheap bound first: UTF-8 is at most 3 bytes per UTF-16 unit.
  if (text.length * 3 > MAX_VALUE_BYTES) {
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes > MAX_VALUE_BYTES) throw new ValueTooLargeError(field, bytes, MAX_VALUE_BYTES);
  }
  return text;
}

/** Parses a stored JSON column; NULL stays undefined. */
export function decodeValue(text: string | null | undefined): JsonValue | undefined {
  return text == null ? undefined : (JSON.parse(text) as JsonValue);
}

/**
 * True when `JSON.stringify(value)` already is its canonical text: plain objects whose keys are in
 * sorted order (UTF-16 code units, as the canonical encoder sorts), dense arrays, strings,
 * booleans, null and finite numbers, nested less than 200 deep. The writers build their event
 * payloads and summaries in key order, so most durable values skip the encoder's key sort and
 * string building (a third of its time per small value, and a flat string for SQLite to bind).
 * Anything else (unsorted keys, a value JSON cannot hold) goes to `fastCanonicalJson`, which also
 * owns every error.
 */
function canonicalAsIs(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value);
    case "object":
      break;
    default:
      return false;
  }
  if (value === null) return true;
  if (depth >= 200) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (!(i in value) || !canonicalAsIs(value[i], depth + 1)) return false;
    }
    return true;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  let previous: string | undefined;
  // Plain objects only, so `for … in` sees exactly the own enumerable string keys, in the order
  // JSON.stringify writes them.
  for (const key in value) {
    if (previous !== undefined && !(previous < key)) return false;
    previous = key;
    const item = (value as Record<string, unknown>)[key];
    if (item !== undefined && !canonicalAsIs(item, depth + 1)) return false;
  }
  return true;
}

/** Durable JSON values: canonical text, bounded to 1 MiB each. */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { ValueTooLargeError } from "./errors.ts";
import { fastCanonicalJson } from "../protocol/fast-canonical-json.ts";

/** Largest canonical JSON text stored in one column (matches the 1 MiB message limit). */
export const MAX_VALUE_BYTES = 1024 * 1024;

/** Canonical JSON of `value` for column `field`; throws `ValueTooLargeError` past 1 MiB. */
export function encodeValue(field: string, value: unknown): string {
  const text = fastCanonicalJson(value === undefined ? null : value);
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

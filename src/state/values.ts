/** Durable JSON values: canonical text, bounded to 1 MiB each. */
import { canonicalJson, type JsonValue } from "../protocol/canonical-json.ts";
import { ValueTooLargeError } from "./errors.ts";

/** Largest canonical JSON text stored in one column (matches the 1 MiB message limit). */
export const MAX_VALUE_BYTES = 1024 * 1024;

/** Canonical JSON of `value` for column `field`; throws `ValueTooLargeError` past 1 MiB. */
export function encodeValue(field: string, value: unknown): string {
  const text = flatCanonicalJson(value) ?? canonicalJson(value === undefined ? null : value);
  // Cheap bound first: UTF-8 is at most 3 bytes per UTF-16 unit.
  if (text.length * 3 > MAX_VALUE_BYTES) {
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes > MAX_VALUE_BYTES) throw new ValueTooLargeError(field, bytes, MAX_VALUE_BYTES);
  }
  return text;
}

/**
 * Canonical JSON of a flat plain object (values strings, finite numbers, booleans or null; keys
 * sorted like `canonicalJson`), else undefined. Most event payloads and viewer summaries are
 * such objects, and this path avoids the general encoder's per-key bookkeeping. For those values
 * the bytes equal `canonicalJson`'s.
 */
function flatCanonicalJson(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return undefined;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let text = "{";
  for (const key of keys) {
    const item = record[key];
    if (item === undefined) continue;
    let encoded: string;
    switch (typeof item) {
      case "string":
      case "boolean":
        encoded = JSON.stringify(item);
        break;
      case "number":
        if (!Number.isFinite(item)) return undefined;
        encoded = JSON.stringify(item);
        break;
      default:
        if (item !== null) return undefined;
        encoded = "null";
    }
    text += `${text.length > 1 ? "," : ""}${JSON.stringify(key)}:${encoded}`;
  }
  return `${text}}`;
}

/** Parses a stored JSON column; NULL stays undefined. */
export function decodeValue(text: string | null | undefined): JsonValue | undefined {
  return text == null ? undefined : (JSON.parse(text) as JsonValue);
}

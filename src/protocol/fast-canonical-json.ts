/**
 * A faster `canonicalJson` for the hot paths (durable values of every protected write, every
 * frame on a socket or channel): the same bytes, without the general encoder's per-key path strings, part arrays
 * and cycle set. Anything unusual (a value JSON cannot hold, a sparse array, a non-plain object,
 * nesting deeper than `MAX_DEPTH`, which is how a cycle shows) goes to `canonicalJson`, so
 * errors and their messages are exactly the general encoder's.
 */
import { canonicalJson, sha256Hex } from "./canonical-json.ts";

const MAX_DEPTH = 200;

/** `canonicalJson(value)`, faster for ordinary values. Throws `NotJsonError` like it. */
export function fastCanonicalJson(value: unknown): string {
  return encode(value, 0) ?? canonicalJson(value);
}

/** `fingerprint(value)` through the faster encoder (the same `sha256:<hex>`). */
export function fastFingerprint(value: unknown): string {
  return `sha256:${sha256Hex(fastCanonicalJson(value))}`;
}

/** Canonical text of `value`, or undefined when the general encoder must decide. */
function encode(value: unknown, depth: number): string | undefined {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      return Number.isFinite(value) ? JSON.stringify(value) : undefined;
    case "boolean":
      return value ? "true" : "false";
    case "object":
      break;
    default:
      return undefined;
  }
  if (value === null) return "null";
  if (depth >= MAX_DEPTH) return undefined;
  if (Array.isArray(value)) {
    let text = "[";
    for (let i = 0; i < value.length; i++) {
      // The general encoder skips holes (forEach); leave such arrays to it.
      if (!(i in value)) return undefined;
      const item: unknown = value[i];
      const encoded = item === undefined ? "null" : encode(item, depth + 1);
      if (encoded === undefined) return undefined;
      text += i === 0 ? encoded : `,${encoded}`;
    }
    return `${text}]`;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return undefined;
  const record = value as Record<string, unknown>;
  // Default sort compares UTF-16 code units, as the general encoder does.
  const keys = Object.keys(record).sort();
  let text = "{";
  for (const key of keys) {
    const item = record[key];
    if (item === undefined) continue;
    const encoded = encode(item, depth + 1);
    if (encoded === undefined) return undefined;
    text += `${text.length === 1 ? "" : ","}${JSON.stringify(key)}:${encoded}`;
  }
  return `${text}}`;
}

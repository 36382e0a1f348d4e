/**
 * A faster `canonicalJson` for the hot paths (durable values of every protected write, every
 * frame on a socket or channel): the same bytes, without the general encoder's per-key path strings, part arrays
 * and cycle set. Anything unusual (a value JSON cannot hold, a sparse array, a non-plain object,
 * nesting deeper than `MAX_JSON_DEPTH`, which is how a cycle shows) goes to `canonicalJson`, so
 * errors and their messages are exactly the general encoder's.
 */
import { canonicalJson, MAX_JSON_DEPTH, sha256Hex } from "./canonical-json.ts";

/** `canonicalJson(value)`, faster for ordinary values. Throws `NotJsonError` like it. */
export function fastCanonicalJson(value: unknown): string {
  if (canonicalAsIs(value, 0)) return JSON.stringify(value);
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
  if (depth >= MAX_JSON_DEPTH) return undefined;
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

/**
 * True when `JSON.stringify(value)` already is its canonical text: plain objects whose keys are in
 * sorted order (UTF-16 code units, as the canonical encoder sorts), dense arrays, strings,
 * booleans, null and finite numbers, nested less than 200 deep. The state writers build their event
 * payloads and summaries in key order, so most durable values skip the key sort and string
 * building (a third of the encoder's time per small value). Anything else (unsorted keys, a value
 * JSON cannot hold) goes on to `encode` and the general encoder, which owns every error.
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
  if (depth >= MAX_JSON_DEPTH) return false;
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

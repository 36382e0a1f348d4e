/**
 * Canonical JSON: object keys sorted by UTF-16 code unit, no insignificant whitespace.
 * Used for the wire format and for every fingerprint and hash, so two equal values always
 * produce the same bytes.
 */
import { createHash, hash } from "node:crypto";

/** A JSON value as it travels on the wire and sits in SQLite. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * How deep a JSON value the parts check before they take it: the host's valibot walk of a
 * request takes a few stack frames a level and overflows some thousands of levels down, so a
 * model's tool call is refused past this with a message it can act on.
 */
export const MAX_JSON_DEPTH = 200;

/** Raised when a value cannot be represented as JSON (functions, cycles, NaN, bigint...). */
export class NotJsonError extends TypeError {
  readonly path: string;
  constructor(path: string, detail: string) {
    super(`Value is not JSON at ${path}: ${detail}`);
    this.name = "NotJsonError";
    this.path = path;
  }
}

/** Serializes `value` canonically. Throws `NotJsonError` for values JSON cannot hold. */
export function canonicalJson(value: unknown): string {
  const parts: string[] = [];
  write(value, "$", parts, new Set());
  return parts.join("");
}

function write(value: unknown, path: string, out: string[], seen: Set<object>): void {
  if (value === null) {
    out.push("null");
    return;
  }
  switch (typeof value) {
    case "boolean":
      out.push(value ? "true" : "false");
      return;
    case "number":
      if (!Number.isFinite(value)) throw new NotJsonError(path, `number ${value} is not finite`);
      out.push(JSON.stringify(value));
      return;
    case "string":
      out.push(JSON.stringify(value));
      return;
    case "object":
      break;
    default:
      throw new NotJsonError(path, `${typeof value} cannot be serialized`);
  }
  const obj = value as object;
  if (seen.has(obj)) throw new NotJsonError(path, "the value contains a cycle");
  seen.add(obj);
  if (Array.isArray(obj)) {
    out.push("[");
    obj.forEach((item, i) => {
      if (i > 0) out.push(",");
      write(item === undefined ? null : item, `${path}[${i}]`, out, seen);
    });
    out.push("]");
  } else {
    const proto = Object.getPrototypeOf(obj);
    if (proto !== Object.prototype && proto !== null) {
      throw new NotJsonError(path, `${proto?.constructor?.name ?? "object"} is not a plain object`);
    }
    const keys = Object.keys(obj).filter((k) => (obj as Record<string, unknown>)[k] !== undefined)
      .sort();
    out.push("{");
    keys.forEach((key, i) => {
      if (i > 0) out.push(",");
      out.push(JSON.stringify(key), ":");
      write((obj as Record<string, unknown>)[key], `${path}.${key}`, out, seen);
    });
    out.push("}");
  }
  seen.delete(obj);
}

/** `sha256:<hex>` of the canonical JSON of `value`: the one fingerprint format of the project. */
export function fingerprint(value: unknown): string {
  return `sha256:${sha256Hex(canonicalJson(value))}`;
}

// The one-shot digest (Node >= 20.12, Deno) skips the Hash object: about half the cost of
// createHash for the short inputs hashed on every worker message.
const oneShot = typeof hash === "function" ? hash : undefined;

/** Hex sha256 of a string (UTF-8) or bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  if (oneShot !== undefined) return oneShot("sha256", data, "hex");
  return createHash("sha256").update(data).digest("hex");
}

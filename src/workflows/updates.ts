/**
 * The bounded `publishUpdate` channel. Updates are live progress, never routing input: each is
 * checked (type pattern, key and data size), counted against a per-attempt set of distinct
 * (type, key) pairs, and rate limited with a token bucket driven by the injected clock.
 */
import { Buffer } from "node:buffer";
import type { Clock } from "../base/clock.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { canonicalJson } from "../protocol/canonical-json.ts";
import type { WorkflowUpdate } from "./types.ts";
import { PROGRESS_SCHEMA, type ProgressData } from "../base/progress.ts";

export {
  estimateProgress,
  PROGRESS_SCHEMA,
  type ProgressData,
  type ProgressSample,
} from "../base/progress.ts";

export const UPDATE_LIMITS = {
  typePattern: /^[a-z][a-z0-9.-]{0,63}$/,
  keyChars: 128,
  dataBytes: 64 * 1024,
  distinctKeys: 1024,
  /** Tokens per second and bucket size. */
  ratePerSecond: 20,
  burst: 100,
} as const;

export function createUpdatePublisher(
  clock: Clock,
  sink: (update: { type: string; key: string; data: JsonValue }) => void,
): (update: WorkflowUpdate) => void {
  const keys = new Set<string>();
  let tokens: number = UPDATE_LIMITS.burst;
  let last = clock.now();
  return (update) => {
    const checked = checkUpdate(update);
    const pair = `${checked.type}\u0000${checked.key}`;
    if (!keys.has(pair) && keys.size >= UPDATE_LIMITS.distinctKeys) {
      throw new RangeError("Update rejected: more than 1024 distinct (type, key) pairs");
    }
    const now = clock.now();
    tokens = Math.min(
      UPDATE_LIMITS.burst,
      tokens + ((now - last) / 1000) * UPDATE_LIMITS.ratePerSecond,
    );
    last = now;
    if (tokens < 1) {
      throw new RangeError("Update rejected: rate limit of 20 per second (burst 100) exceeded");
    }
    tokens -= 1;
    keys.add(pair);
    sink(checked);
  };
}

/** Validates one update; throws a one-line TypeError or RangeError naming the field. */
export function checkUpdate(update: unknown): { type: string; key: string; data: JsonValue } {
  if (typeof update !== "object" || update === null) {
    throw new TypeError("Update rejected: expected {type, key, data}");
  }
  const { type, key, data } = update as Record<string, unknown>;
  if (typeof type !== "string" || !UPDATE_LIMITS.typePattern.test(type)) {
    throw new TypeError(`Update rejected: type must match ${UPDATE_LIMITS.typePattern}`);
  }
  if (typeof key !== "string" || key.length === 0 || key.length > UPDATE_LIMITS.keyChars) {
    throw new RangeError("Update rejected: key must be 1-128 characters");
  }
  let text: string;
  try {
    text = canonicalJson(data === undefined ? null : data);
  } catch (error) {
    throw new TypeError(`Update rejected: data is not JSON: ${(error as Error).message}`);
  }
  if (Buffer.byteLength(text) > UPDATE_LIMITS.dataBytes) {
    throw new RangeError("Update rejected: data is over 64 KiB");
  }
  const value = JSON.parse(text) as JsonValue;
  if (type === "progress") checkProgress(value);
  return { type, key, data: value };
}

function checkProgress(data: JsonValue): void {
  const d = data as Partial<ProgressData> | null;
  const nonNeg = (n: unknown) => typeof n === "number" && Number.isFinite(n) && n >= 0;
  if (
    typeof d !== "object" || d === null || d.schema !== PROGRESS_SCHEMA || !nonNeg(d.completed) ||
    (d.total !== undefined && !nonNeg(d.total)) ||
    (d.unit !== undefined && typeof d.unit !== "string") ||
    (d.label !== undefined && typeof d.label !== "string")
  ) {
    throw new TypeError(
      `Update rejected: progress data must be {schema: "${PROGRESS_SCHEMA}", completed, total?, unit?, label?}`,
    );
  }
}

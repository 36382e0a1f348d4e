/**
 * The hand-written checks of the hot worker messages (worker-message-fast.ts) against the
 * valibot schemas, the reference: on seeded generated and mutated frames (made by JSON.parse,
 * as the host receives them) the fast check never accepts what the schemas refuse, its output
 * equals theirs, and it accepts every well-formed hot message (so the host really uses it).
 */
import { describe, expect, test } from "vitest";
import { fastWorkerHeader, fastWorkerPayload } from "../../src/protocol/worker-message-fast.ts";
import {
  parseWorkerHeader,
  parseWorkerPayload,
  WORKER_LAUNCH_SCHEMA,
} from "../../src/protocol/worker-messages.ts";

/** mulberry32: a small seeded generator, so a failure names a reproducible case. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rand = () => number;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

function text(r: Rand, max = 12): string {
  const n = Math.floor(r() * max);
  let s = "";
  for (let i = 0; i < n; i++) s += pick(r, ["a", "Z", "0", "-", ".", " ", "é", "\u0000", "😀"]);
  return s;
}

function json(r: Rand, depth = 0): unknown {
  const k = Math.floor(r() * (depth > 2 ? 4 : 6));
  if (k === 0) return null;
  if (k === 1) return r() < 0.5;
  if (k === 2) return pick(r, [0, -1, 1.5, 2 ** 53, 1e300, -0]);
  if (k === 3) return text(r);
  if (k === 4) return Array.from({ length: Math.floor(r() * 3) }, () => json(r, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(r() * 3); i > 0; i--) o[`k${text(r, 4)}`] = json(r, depth + 1);
  return o;
}

function payloadFor(r: Rand, kind: string): Record<string, unknown> {
  switch (kind) {
    case "node.started":
      return {
        nodeId: pick(r, ["a", "mount/child", "x".repeat(1000)]),
        nodeKind: pick(r, ["compute", "action", "k".repeat(100)]),
        effect: pick(r, ["pure", "external"]),
        deadlineAt: pick(r, [null, 0, 1_733_000_000_000]),
      };
    case "node.finished":
      return { output: json(r) };
    case "node.failed":
      return {
        outcome: pick(r, ["failed", "timed_out", "cancelled"]),
        error: { code: pick(r, ["", "nodeFailed", "c".repeat(128)]), message: text(r) },
      };
    case "node.update":
      return r() < 0.5
        ? { type: pick(r, ["progress", "t".repeat(100)]), data: json(r) }
        : { type: "note", key: pick(r, ["", "k", "k".repeat(1000)]), data: json(r) };
    default:
      return { op: pick(r, ["heartbeat", "facts.next"]) };
  }
}

const KINDS = ["node.started", "node.finished", "node.failed", "node.update", "worker.progress"];

function validMessage(r: Rand): Record<string, unknown> {
  const kind = pick(r, KINDS);
  const m: Record<string, unknown> = {
    schema: WORKER_LAUNCH_SCHEMA,
    kind,
    messageId: `wep-1.${String(Math.floor(r() * 1e9)).padStart(9, "0")}`,
    runId: "run-1",
    generation: pick(r, [1, 2, 2 ** 53 - 1]),
    workerEpoch: pick(r, ["wep-1", "e".repeat(200)]),
    payload: payloadFor(r, kind),
  };
  if (kind !== "worker.progress" || r() < 0.3) m.attemptId = "att-1";
  if (r() < 0.8) m.expectedRevision = pick(r, [0, 7, 2 ** 53 - 1]);
  return m;
}

const ODD_VALUES = [
  undefined,
  null,
  "",
  "x".repeat(201),
  "has space",
  0,
  -1,
  1.5,
  2 ** 53,
  [],
  {},
  true,
  "heartbeat",
  "process.register",
  "pure",
  "failed",
  "run.finished",
  "y".repeat(1001),
];

/** One random change: drop, add or replace a field, in the header or the payload. */
function mutate(r: Rand, m: Record<string, unknown>): Record<string, unknown> {
  const copy = structuredClone(m);
  const inPayload = r() < 0.6 && typeof copy.payload === "object" && copy.payload !== null;
  const target = (inPayload ? copy.payload : copy) as Record<string, unknown>;
  const keys = Object.keys(target);
  const action = Math.floor(r() * 3);
  if (action === 0 && keys.length > 0) delete target[pick(r, keys)];
  else if (action === 1) target[pick(r, ["extra", "error", "key", "attemptId", "op"])] = 1;
  else if (keys.length > 0) target[pick(r, keys)] = pick(r, ODD_VALUES);
  if (r() < 0.1) copy.payload = pick(r, [null, [], "x", 1]);
  return copy;
}

/** The schemas' verdict on a received frame: the parsed message, or null when refused. */
function reference(frame: unknown): unknown {
  const header = parseWorkerHeader(frame);
  if (!header.ok) return null;
  const message = parseWorkerPayload(header.value, frame);
  return message.ok ? message.value : null;
}

function fast(frame: unknown): unknown {
  const header = fastWorkerHeader(frame);
  if (!header) return undefined;
  const payload = fastWorkerPayload(header.kind, (frame as { payload?: unknown }).payload);
  return payload ? { ...header, payload } : undefined;
}

describe("hand-written worker message checks", () => {
  test("accept every well-formed hot message, with the schemas' output", () => {
    const r = rng(15);
    for (let i = 0; i < 3000; i++) {
      const frame = JSON.parse(JSON.stringify(validMessage(r)));
      const expected = reference(frame);
      expect(expected, JSON.stringify(frame)).not.toBeNull();
      expect(fast(frame), JSON.stringify(frame)).toEqual(expected);
    }
  });

  test("never accept what the schemas refuse (mutated messages)", () => {
    const r = rng(1500);
    let refused = 0;
    let fastAccepted = 0;
    for (let i = 0; i < 20_000; i++) {
      let m = validMessage(r);
      for (let n = 1 + Math.floor(r() * 2); n > 0; n--) m = mutate(r, m);
      const frame = JSON.parse(JSON.stringify(m) ?? "null");
      const expected = reference(frame);
      const got = fast(frame);
      if (expected === null) refused++;
      if (got !== undefined) {
        fastAccepted++;
        expect(got, JSON.stringify(frame)).toEqual(expected);
      }
    }
    // The mutations really exercise both sides.
    expect(refused).toBeGreaterThan(5_000);
    expect(fastAccepted).toBeGreaterThan(1_000);
  });

  test("leave the other kinds to the schemas", () => {
    const frame = {
      schema: WORKER_LAUNCH_SCHEMA,
      kind: "run.finished",
      messageId: "m-1",
      runId: "run-1",
      generation: 1,
      workerEpoch: "wep-1",
      payload: { state: "completed", output: null },
    };
    expect(fastWorkerHeader(frame)).toBeUndefined();
    expect(reference(frame)).not.toBeNull();
  });
});

/**
 * Seeded fuzzing of the frame reader and the request parser: random valid frames, random bytes
 * and mutated frames, cut into random chunks. Bounded count, fixed seed, so a failure replays.
 */
import { describe, expect, test } from "vitest";
import { Buffer } from "node:buffer";
import { encodeFrame, type Frame, FrameDecoder } from "../../src/protocol/framing.ts";
import { HOST_REQUEST_SCHEMA, parseHostRequest } from "../../src/protocol/host-request.ts";
import { parseWorkerMessage } from "../../src/protocol/worker-messages.ts";
import { HOST_OPERATIONS } from "../../src/protocol/host-operations.ts";

/** mulberry32: small, fast, deterministic. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return { next, int, pick: <T>(items: readonly T[]) => items[int(items.length)] };
}
type Rng = ReturnType<typeof random>;

const ALPHABET = ["a", "Z", "0", " ", "é", "日", "🚀", '"', "\\", "{", "}", "\u0000", "\u2028"];

function randomValue(rng: Rng, depth = 0): unknown {
  switch (rng.int(depth > 3 ? 4 : 6)) {
    case 0:
      return null;
    case 1:
      return rng.next() < 0.5;
    case 2:
      return rng.int(1e9) - 5e8;
    case 3:
      return Array.from({ length: rng.int(12) }, () => rng.pick(ALPHABET)).join("");
    case 4:
      return Array.from({ length: rng.int(4) }, () => randomValue(rng, depth + 1));
    default:
      return Object.fromEntries(
        Array.from(
          { length: rng.int(4) },
          (_, i) => [`k${i}${rng.pick(ALPHABET)}`, randomValue(rng, depth + 1)],
        ),
      );
  }
}

function randomRequest(rng: Rng): unknown {
  return {
    schema: HOST_REQUEST_SCHEMA,
    requestId: `r-${rng.int(1000)}`,
    clientId: "c",
    operation: rng.pick(HOST_OPERATIONS),
    ...(rng.next() < 0.5 ? { runId: "run-1" } : {}),
    payload: randomValue(rng),
  };
}

function mutate(rng: Rng, frame: Buffer): Buffer {
  const copy = Buffer.from(frame);
  switch (rng.int(5)) {
    case 0: // flip bytes
      for (let i = 0; i < 1 + rng.int(4); i++) copy[rng.int(copy.length)] = rng.int(256);
      return copy;
    case 1: // truncate (keeps or loses the newline)
      return copy.subarray(0, rng.int(copy.length));
    case 2: // inject a newline in the middle
      return Buffer.concat([copy.subarray(0, rng.int(copy.length)), Buffer.from("\n"), copy]);
    case 3: // random bytes
      return Buffer.from(Array.from({ length: rng.int(64) }, () => rng.int(256)));
    default: // blow past the bound
      return Buffer.concat([Buffer.from('"'), Buffer.alloc(5000 + rng.int(3000), 0x61), copy]);
  }
}

describe("framing fuzz", () => {
  test("random and mutated frames never throw, never overfill, never lose a good frame", () => {
    const rng = random(0x5eed);
    const maxBytes = 4096;
    let frames = 0;
    let goodSeen = 0;
    for (let round = 0; round < 400; round++) {
      const parts: Buffer[] = [];
      for (let i = 0; i < 30; i++) {
        const value = rng.next() < 0.5 ? randomRequest(rng) : randomValue(rng);
        const frame = encodeFrame(value, { maxBytes: 1 << 20 });
        parts.push(rng.next() < 0.4 ? mutate(rng, frame) : frame);
        frames++;
      }
      // Whatever came before, a newline then a good frame must decode as that frame.
      const sentinel = { sentinel: round };
      parts.push(Buffer.from("\n"), encodeFrame(sentinel));
      const stream = Buffer.concat(parts);

      const decoder = new FrameDecoder({ maxBytes });
      const out: Frame[] = [];
      for (let at = 0; at < stream.length;) {
        const size = 1 + rng.int(rng.next() < 0.2 ? 8 : 2048);
        out.push(...decoder.push(stream.subarray(at, at + size)));
        expect(decoder.bufferedBytes).toBeLessThanOrEqual(maxBytes);
        at += size;
      }
      out.push(...decoder.end());

      for (const frame of out) {
        if (!frame.ok) continue;
        goodSeen++;
        expect(frame.bytes).toBeLessThanOrEqual(maxBytes);
        // The parsers must answer, not throw, whatever a decoded frame holds.
        const request = parseHostRequest(frame.value);
        if (!request.ok) expect(request.error).not.toContain("\n");
        parseWorkerMessage(frame.value);
      }
      expect(out.at(-1)).toEqual({
        ok: true,
        value: sentinel,
        bytes: encodeFrame(sentinel).length - 1,
      });
    }
    expect(frames).toBe(12_000);
    expect(goodSeen).toBeGreaterThan(5_000);
  });
});

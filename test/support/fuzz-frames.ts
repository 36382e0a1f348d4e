/**
 * Seeded generator of hostile frames for the socket fuzz test: random bytes, random JSON, and
 * valid requests mutated (fields dropped, retyped, added, truncated, byte-flipped, split,
 * unfinished, oversized). `host.stop` is never produced, so the host under test stays up.
 */
import { HOST_OPERATIONS } from "../../src/protocol/host-operations.ts";

/** mulberry32: small, fast, deterministic. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const OPERATIONS = HOST_OPERATIONS.filter((op) => op !== "host.stop");

export interface FuzzFrame {
  bytes: Buffer;
  /** Whether the frame may be a valid request (it then gets an ordinary answer). */
  kind: string;
}

export function createFrameGenerator(seed: number, runIds: string[]): () => FuzzFrame {
  const random = prng(seed);
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)];
  let counter = 0;

  const randomString = (max: number) => {
    const chars = [];
    const length = int(max);
    for (let i = 0; i < length; i++) chars.push(String.fromCharCode(int(0x24f)));
    return chars.join("");
  };

  const randomJson = (depth: number): unknown => {
    switch (depth > 3 ? int(5) : int(8)) {
      case 0:
        return null;
      case 1:
        return random() < 0.5;
      case 2:
        return pick([0, -1, 1.5, 2 ** 53, -0, 1e300, int(1000)]);
      case 3:
      case 4:
        return randomString(30);
      case 5:
        return Array.from({ length: int(4) }, () => randomJson(depth + 1));
      default: {
        const value: Record<string, unknown> = {};
        for (let i = 0; i < int(4); i++) value[randomString(8)] = randomJson(depth + 1);
        return value;
      }
    }
  };

  const validRequest = (): Record<string, unknown> => {
    const id = `fuzz-${seed}-${++counter}`;
    const base = {
      schema: "pi-workflows.host-request.v1",
      requestId: random() < 0.05 ? `fuzz-${seed}-1` : id, // sometimes reuse an id
      clientId: `fuzz-client-${int(3)}`,
    };
    const runId = random() < 0.9 ? pick(runIds) : `run-missing-${int(5)}`;
    switch (int(7)) {
      case 0:
        return { ...base, operation: "host.status", payload: {} };
      case 1:
        return { ...base, operation: "run.list", payload: { all: random() < 0.5 } };
      case 2:
        return { ...base, operation: "run.status", runId, payload: { eventsAfter: int(3) } };
      case 3:
        return { ...base, operation: "run.pause", runId, payload: {} };
      case 4:
        return { ...base, operation: "run.resume", runId, payload: {} };
      case 5:
        return { ...base, operation: "run.cancel", runId, expectedRevision: int(4) + 1 };
      default:
        return { ...base, operation: pick(OPERATIONS), payload: randomJson(0) };
    }
  };

  const line = (text: string | Buffer) =>
    Buffer.concat([Buffer.isBuffer(text) ? text : Buffer.from(text, "utf8"), Buffer.from("\n")]);

  return () => {
    const choice = int(100);
    if (choice < 8) {
      return {
        kind: "randomBytes",
        bytes: line(Buffer.from(Array.from({ length: int(200) }, () => int(256)))),
      };
    }
    if (choice < 14) return { kind: "randomJson", bytes: line(JSON.stringify(randomJson(0))) };
    if (choice < 30) return { kind: "valid", bytes: line(JSON.stringify(validRequest())) };
    const request = validRequest();
    const keys = Object.keys(request);
    if (choice < 40) {
      delete request[pick(keys)];
      return { kind: "dropField", bytes: line(JSON.stringify(request)) };
    }
    if (choice < 52) {
      request[pick(keys)] = randomJson(1);
      return { kind: "retypeField", bytes: line(JSON.stringify(request)) };
    }
    if (choice < 58) {
      request[randomString(10) || "x"] = randomJson(1);
      return { kind: "extraField", bytes: line(JSON.stringify(request)) };
    }
    if (choice < 66) {
      const text = JSON.stringify(request);
      return { kind: "truncated", bytes: line(text.slice(0, int(text.length))) };
    }
    if (choice < 76) {
      const bytes = Buffer.from(JSON.stringify(request));
      for (let i = 0; i < 1 + int(3); i++) bytes[int(bytes.length)] = int(256);
      return { kind: "byteFlip", bytes: line(bytes) };
    }
    if (choice < 80) {
      request.operation = random() < 0.5 ? pick(OPERATIONS) : randomString(12);
      return { kind: "operation", bytes: line(JSON.stringify(request)) };
    }
    if (choice < 84) {
      const frames = [request, validRequest(), validRequest()].map((r) => JSON.stringify(r));
      return { kind: "several", bytes: line(frames.join("\n")) };
    }
    if (choice < 88) {
      return { kind: "unfinished", bytes: Buffer.from(JSON.stringify(request).slice(0, 40)) };
    }
    if (choice < 91) {
      const depth = 500 + int(2000);
      return { kind: "deep", bytes: line("[".repeat(depth) + "]".repeat(depth)) };
    }
    if (choice < 94) {
      return {
        kind: "badUtf8",
        bytes: line(Buffer.from([0x7b, 0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x82, 0x7d])),
      };
    }
    if (choice < 97) {
      request.requestId = "r".repeat(150 + int(100));
      request.expectedRevision = pick([-1, 1.5, 1e400, "3", null]);
      return { kind: "limits", bytes: line(JSON.stringify(request).replace("1e+400", "1e400")) };
    }
    if (choice < 99) {
      return { kind: "blank", bytes: Buffer.from(pick(["\n", " \n", "\r\n", "\t\n"])) };
    }
    // Rarely: one byte over the 1 MiB bound.
    if (random() < 0.2) {
      return { kind: "oversized", bytes: line("a".repeat(1024 * 1024 + 1)) };
    }
    return { kind: "valid", bytes: line(JSON.stringify(validRequest())) };
  };
}

/**
 * The hand-written check of a plain `run.status` (host-request-fast.ts) against
 * `parseHostRequest`, the reference: on seeded mutations of a plain status request (as
 * `JSON.parse` makes them) it never accepts what the schemas refuse, its request equals theirs,
 * and it accepts the plain requests pollers send.
 */
import { describe, expect, test } from "vitest";
import { fastPlainRunStatus } from "../../src/protocol/host-request-fast.ts";
import { HOST_REQUEST_SCHEMA, parseHostRequest } from "../../src/protocol/host-request.ts";

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
const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

const ODD = [
  undefined,
  null,
  "",
  "x".repeat(201),
  "with space",
  0,
  1,
  2 ** 53,
  -1,
  [],
  {},
  { eventsAfter: 0 },
  { includeUpdates: false },
  "run.list",
  "run.status",
  HOST_REQUEST_SCHEMA,
  "k",
];

function plain(r: () => number): Record<string, unknown> {
  const m: Record<string, unknown> = {
    schema: HOST_REQUEST_SCHEMA,
    requestId: `req-${Math.floor(r() * 1e6)}`,
    clientId: pick(r, ["cli-1", "c".repeat(200)]),
    operation: "run.status",
    runId: "run-1",
    payload: {},
  };
  if (r() < 0.5) m.hostEpoch = pick(r, [1, 7, 2 ** 53 - 1]);
  return m;
}

describe("hand-written plain run.status check", () => {
  test("accepts plain requests with the parser's result", () => {
    const r = rng(7);
    for (let i = 0; i < 2000; i++) {
      const frame = JSON.parse(JSON.stringify(plain(r)));
      const reference = parseHostRequest(frame);
      expect(reference.ok).toBe(true);
      expect(fastPlainRunStatus(frame)).toEqual(reference.ok ? reference.request : null);
    }
  });

  test("never accepts what the parser refuses (mutated requests)", () => {
    const r = rng(70);
    let refused = 0;
    let accepted = 0;
    for (let i = 0; i < 20_000; i++) {
      const m = plain(r);
      for (let n = 1 + Math.floor(r() * 2); n > 0; n--) {
        const keys = Object.keys(m);
        const action = Math.floor(r() * 3);
        if (action === 0) delete m[pick(r, keys)];
        else if (action === 1) {
          m[pick(r, ["extra", "expectedRevision", "idempotencyKey", "hostEpoch"])] = pick(r, ODD);
        } else m[pick(r, keys)] = pick(r, ODD);
      }
      const frame = JSON.parse(JSON.stringify(m));
      const reference = parseHostRequest(frame);
      if (!reference.ok) refused++;
      const fast = fastPlainRunStatus(frame);
      if (fast !== undefined) {
        accepted++;
        expect(reference.ok, JSON.stringify(frame)).toBe(true);
        expect(fast).toEqual(reference.ok ? reference.request : null);
      }
    }
    expect(refused).toBeGreaterThan(5_000);
    expect(accepted).toBeGreaterThan(1_000);
  });
});

import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/protocol/canonical-json.ts";
import { encodeValue } from "../../src/state/values.ts";

/** Deterministic pseudo-random source so a failure reproduces. */
function rng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const KEYS = ["", "a", "B", "10", "9", "2", "é", "\ud800", "\u{1f600}", 'q"', "Z_", "__proto__"];
const LEAVES: unknown[] = [
  null,
  true,
  false,
  0,
  -0,
  1.5,
  1e21,
  5e-324,
  "",
  "x\n",
  "\u2028",
  "\udc00",
];

/** Records whose keys are inserted in sorted order (the writers' shape) or shuffled. */
function randomValue(next: () => number, depth: number, sorted: boolean): unknown {
  const pick = Math.floor(next() * (depth > 3 ? 2 : 4));
  if (pick === 0) return LEAVES[Math.floor(next() * LEAVES.length)];
  if (pick === 1) return next() < 0.1 ? undefined : Math.floor(next() * 1000);
  if (pick === 2) {
    return Array.from(
      { length: Math.floor(next() * 4) },
      () => randomValue(next, depth + 1, sorted),
    );
  }
  const keys = KEYS.filter(() => next() < 0.4);
  if (sorted) keys.sort();
  else keys.sort(() => next() - 0.5);
  // JSON.parse makes `__proto__` an own key, as a decoded worker message would have it.
  const record = JSON.parse("{}") as Record<string, unknown>;
  for (const key of keys) {
    Object.defineProperty(record, key, {
      value: randomValue(next, depth + 1, sorted),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return record;
}

function outcome(encode: () => string): string {
  try {
    return `ok ${encode()}`;
  } catch (error) {
    return `throws ${(error as Error).name}: ${(error as Error).message}`;
  }
}

describe("encodeValue", () => {
  it("gives canonicalJson's bytes for values whose keys are already sorted, and for others", () => {
    const next = rng(11);
    for (let i = 0; i < 4000; i++) {
      const value = randomValue(next, 0, i % 2 === 0);
      expect(outcome(() => encodeValue("v", value))).toBe(
        outcome(() => canonicalJson(value === undefined ? null : value)),
      );
    }
  });

  it("leaves what JSON cannot hold inside an otherwise sorted object to canonicalJson", () => {
    const sparse: unknown[] = [1];
    sparse[2] = 3;
    for (
      const bad of [Number.NaN, Infinity, 10n, () => 1, Symbol("s"), new Date(0), sparse, new Map()]
    ) {
      const value = { a: 1, b: bad, c: "x" };
      expect(outcome(() => encodeValue("v", value))).toBe(outcome(() => canonicalJson(value)));
    }
    // Integer-like keys enumerate numerically ("2" before "10"), not in canonical order.
    expect(encodeValue("v", { "2": 1, "10": 2 })).toBe('{"10":2,"2":1}');
    expect(encodeValue("v", { a: [undefined], b: undefined })).toBe('{"a":[null]}');
    expect(() => encodeValue("v", { a: 1, b: Number.NaN })).toThrow();
  });
});

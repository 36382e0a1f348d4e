import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/protocol/canonical-json.ts";
import { fastCanonicalJson } from "../../src/protocol/fast-canonical-json.ts";

/** Deterministic pseudo-random source so a failure reproduces. */
function rng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const STRINGS = ["", "a", "B", "10", "9", "é", "\u2028", "\ud800", "\u{1f600}", 'q"\\\n\t', "Z_"];

function randomValue(next: () => number, depth: number): unknown {
  const pick = Math.floor(next() * (depth > 3 ? 6 : 9));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return next() < 0.5;
    case 2:
      return [0, -0, 1.5, -3, 1e21, 2 ** 53, 5e-324][Math.floor(next() * 7)];
    case 3:
    case 4:
      return STRINGS[Math.floor(next() * STRINGS.length)];
    case 5:
      return next() < 0.2 ? undefined : Math.floor(next() * 1000);
    case 6:
    case 7: {
      const record: Record<string, unknown> = {};
      const size = Math.floor(next() * 6);
      for (let i = 0; i < size; i++) {
        record[STRINGS[Math.floor(next() * STRINGS.length)]] = randomValue(next, depth + 1);
      }
      return record;
    }
    default:
      return Array.from({ length: Math.floor(next() * 5) }, () => randomValue(next, depth + 1));
  }
}

function outcome(encode: (value: unknown) => string, value: unknown): string {
  try {
    return `ok ${encode(value)}`;
  } catch (error) {
    return `throws ${(error as Error).name}: ${(error as Error).message}`;
  }
}

describe("fastCanonicalJson", () => {
  it("gives the same bytes as canonicalJson for thousands of random values", () => {
    const next = rng(7);
    for (let i = 0; i < 5000; i++) {
      const value = randomValue(next, 0);
      expect(outcome(fastCanonicalJson, value)).toBe(outcome(canonicalJson, value));
    }
  });

  it("leaves every value JSON cannot hold to canonicalJson, with its error", () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    const sparse: unknown[] = [1];
    sparse[2] = 3;
    let deep: unknown = "end";
    for (let i = 0; i < 500; i++) deep = { d: deep };
    const odd: unknown[] = [
      undefined,
      Number.NaN,
      Infinity,
      10n,
      () => 1,
      Symbol("s"),
      new Date(0),
      { nested: [1, new Map()] },
      cycle,
      sparse,
      deep,
      Object.create(null),
    ];
    for (const value of odd) {
      expect(outcome(fastCanonicalJson, value)).toBe(outcome(canonicalJson, value));
    }
    expect(outcome(fastCanonicalJson, cycle)).toMatch(/^throws NotJsonError/);
  });

  it("sorts keys by UTF-16 code unit, integer-like keys included", () => {
    expect(fastCanonicalJson({ b: 1, "10": 2, "9": 3, a: [true, null, "x"] })).toBe(
      '{"10":2,"9":3,"a":[true,null,"x"],"b":1}',
    );
  });
});

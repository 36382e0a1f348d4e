/**
 * The load check for a 0.12 comparison of a result's error as a string
 * (src/workflows/error-compare-012.ts): it finds one in a callback's text, and its patterns stay
 * linear on long runs of whitespace (an unbounded lookbehind took ~10 s on 3,000 spaces).
 */
import { describe, expect, it } from "vitest";
import { findErrorStringComparison } from "../../src/workflows/error-compare-012.ts";

describe("a result's error compared as a string", () => {
  it("is found in a callback, and not where typeof checks for an object", () => {
    expect(findErrorStringComparison({ run: (c: any) => c.results.a.error === "boom" })).toBe(
      "run",
    );
    expect(findErrorStringComparison({ run: (c: any) => typeof c.results.a.error === "object" }))
      .toBeNull();
  });

  it("stays fast on a callback with a long run of whitespace", () => {
    // Built from text so the whitespace survives in Function.prototype.toString.
    const run = new Function(
      "results",
      `return results.a.error${" ".repeat(3_000)};`,
    ) as () => unknown;
    expect(findErrorStringComparison({ nodes: { a: { run } } })).toBeNull();
  });
});

import { describe, expect, it } from "vitest";
import { checkUpdate, estimateProgress } from "../../src/workflows/index.ts";

describe("checkUpdate()", () => {
  it("accepts a well-formed update and normalizes its data to JSON", () => {
    expect(checkUpdate({ type: "log.line", key: "k", data: { a: undefined, b: [1] } })).toEqual({
      type: "log.line",
      key: "k",
      data: { b: [1] },
    });
    expect(() => checkUpdate(null)).toThrow("Update rejected: expected {type, key, data}");
    expect(() => checkUpdate({ type: "x", key: "k", data: () => 1 })).toThrow(/data is not JSON/);
    expect(() => checkUpdate({ type: "x", key: "k".repeat(129), data: 1 })).toThrow(
      /1-128 characters/,
    );
  });
});

describe("estimateProgress()", () => {
  it("derives rate, ETA and fraction from progress samples", () => {
    expect(estimateProgress([])).toEqual({ ratePerSecond: null, etaMs: null, fraction: null });
    expect(estimateProgress([{ at: 0, completed: 2, total: 10 }])).toEqual({
      ratePerSecond: null,
      etaMs: null,
      fraction: 0.2,
    });
    expect(estimateProgress([
      { at: 0, completed: 0, total: 10 },
      { at: 2000, completed: 4, total: 10 },
    ])).toEqual({ ratePerSecond: 2, etaMs: 3000, fraction: 0.4 });
    expect(estimateProgress([{ at: 0, completed: 1 }, { at: 1000, completed: 3 }])).toEqual({
      ratePerSecond: 2,
      etaMs: null,
      fraction: null,
    });
  });
});

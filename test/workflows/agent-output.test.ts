import { describe, expect, it } from "vitest";
import { normalizeAgentOutput, parseTolerantJson } from "../../src/workflows/index.ts";

describe("normalizeAgentOutput()", () => {
  it("parses strict JSON, a fenced block, or the first balanced object or array", () => {
    expect(normalizeAgentOutput('{"a":1}')).toEqual({ a: 1 });
    expect(normalizeAgentOutput("  [1, 2]  ")).toEqual([1, 2]);
    expect(normalizeAgentOutput('Here:\n```json\n{"a": "}"}\n```\nthanks')).toEqual({ a: "}" });
    expect(
      normalizeAgentOutput('I think {"route": "yes", "why": "a \\"quoted\\" {brace}"} is right'),
    )
      .toEqual({ route: "yes", why: 'a "quoted" {brace}' });
    expect(normalizeAgentOutput('broken { "x": } then {"ok": true}')).toEqual({ ok: true });
  });

  it("keeps text with no JSON as a string and passes JSON values through", () => {
    expect(normalizeAgentOutput("just words")).toBe("just words");
    expect(normalizeAgentOutput({ a: [1, null] })).toEqual({ a: [1, null] });
    expect(parseTolerantJson("nothing")).toEqual({ found: false });
  });

  it("refuses values that do not survive a JSON round trip", () => {
    expect(() => normalizeAgentOutput({ n: Number.NaN })).toThrow(
      /Agent output is not JSON: .*not finite/,
    );
    expect(() => normalizeAgentOutput({ f: () => 1 })).toThrow(/Agent output is not JSON/);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => normalizeAgentOutput(cyclic)).toThrow(/cycle/);
  });
});

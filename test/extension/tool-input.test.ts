import { describe, expect, it } from "vitest";
import * as v from "valibot";
import { parseToolCall, TOOL_ACTIONS, TOOL_PARAMETERS } from "../../src/extension/tool-input.ts";
import { MAX_JSON_DEPTH } from "../../src/protocol/canonical-json.ts";
import { JsonValueSchema } from "../../src/protocol/run-facts.ts";

describe("workflow tool input", () => {
  it("is one flat object schema that providers accept", () => {
    expect(TOOL_PARAMETERS.type).toBe("object");
    expect(TOOL_PARAMETERS.additionalProperties).toBe(false);
    expect(TOOL_PARAMETERS.required).toEqual(["action"]);
    const properties = TOOL_PARAMETERS.properties as Record<string, Record<string, unknown>>;
    expect(Object.keys(properties).sort()).toEqual(
      ["action", "attempt", "input", "offset", "output", "runId", "step", "update", "workflow"],
    );
    expect(properties.action.enum).toEqual([...TOOL_ACTIONS]);
    // No nested combinators a provider might refuse.
    expect(JSON.stringify(TOOL_PARAMETERS)).not.toMatch(/anyOf|oneOf|allOf|\$ref/);
  });

  it("accepts each action's contract", () => {
    const good = [
      { action: "list" },
      { action: "list", offset: 50 },
      { action: "start", workflow: "deploy", input: { task: "x" } },
      { action: "status" },
      { action: "cancel", runId: "run-1" },
      { action: "answer", input: { ok: true } },
      { action: "update", step: "s", attempt: "a", update: { type: "status", data: { m: 1 } } },
      { action: "submit", step: "s", attempt: "a", output: null },
      { action: "submit", step: "s", attempt: "a", output: { steps: ["x"] } },
    ];
    for (const params of good) {
      expect(parseToolCall(params), JSON.stringify(params)).toMatchObject({ ok: true });
    }
  });

  it("reports the first problems of a bad call per action", () => {
    const cases: [unknown, RegExp][] = [
      [{}, /"action" must be one of list, start/],
      [{ action: "fly" }, /"action" must be one of/],
      [{ action: "start" }, /action "start": workflow: required/],
      [{ action: "submit", step: "s" }, /action "submit": attempt: required; output: required/],
      [
        { action: "submit", step: "s", attempt: "a", output: 1, runId: "r" },
        /runId: not used by this action/,
      ],
      [{ action: "list", offset: -1 }, /offset: /],
      [
        { action: "update", step: "s", attempt: "a", update: { type: "BAD", data: 1 } },
        /update.type: expected a lowercase type/,
      ],
      [{ action: "answer" }, /input: required/],
    ];
    for (const [params, message] of cases) {
      const parsed = parseToolCall(params);
      expect(parsed.ok, JSON.stringify(params)).toBe(false);
      if (!parsed.ok) expect(parsed.error, JSON.stringify(params)).toMatch(message);
    }
    const many = parseToolCall({ action: "submit", a: 1, b: 2, c: 3, d: 4 });
    expect(many.ok).toBe(false);
    if (!many.ok) expect(many.error).toMatch(/\(and \d+ more\)$/);
  });

  it("takes the JSON values JsonValueSchema takes, as Pi parsed them (not walked into copies)", () => {
    const values: unknown[] = [
      null,
      true,
      0,
      -1.5,
      "",
      "text",
      [],
      [1, "a", null, [{}]],
      {},
      { steps: ["x"], nested: { deep: [{ ok: true }] } },
      Number.NaN,
      Number.POSITIVE_INFINITY,
      undefined,
      () => 1,
      Symbol("s"),
      10n,
      [1, undefined],
      { ok: Number.NaN },
      { fine: 1, bad: { worse: [() => 2] } },
    ];
    // Keys valibot's record leaves out (unchecked): the value goes on without them.
    const dropping = [
      JSON.parse('{"__proto__":{"polluted":true},"a":1}'),
      JSON.parse('{"keep":[1],"constructor":"x","inner":{"prototype":{"n":null},"b":[2]}}'),
      JSON.parse('{"prototype":1}'),
      { a: 1, constructor: () => 1 },
    ];
    for (const output of [...values, ...dropping]) {
      const parsed = parseToolCall({ action: "submit", step: "s", attempt: "a", output });
      const label = String(typeof output === "bigint" ? `${output}n` : JSON.stringify(output));
      const reference = v.safeParse(JsonValueSchema, output);
      expect(parsed.ok, label).toBe(reference.success);
      if (!parsed.ok || parsed.call.action !== "submit") continue;
      expect(parsed.call.output, label).toStrictEqual(reference.output);
      if (!dropping.includes(output)) expect(parsed.call.output).toBe(output);
    }
    const stripped = parseToolCall({
      action: "submit",
      step: "s",
      attempt: "a",
      output: dropping[1],
    });
    expect(stripped).toStrictEqual({
      ok: true,
      call: { action: "submit", step: "s", attempt: "a", output: { keep: [1], inner: { b: [2] } } },
    });
    expect(Object.getPrototypeOf(dropping[0])).toBe(Object.prototype);
    // A hole is no JSON (Pi's parse never makes one): JsonValueSchema's union fell through to its
    // record and took [1, , 2] as {"0": 1, "2": 2}; the encoder would have sent [1,2]. Refused.
    // deno-lint-ignore no-sparse-arrays
    for (const output of [[1, , 2], { list: [[, "x"]] }, new Array(3)]) {
      const holed = parseToolCall({ action: "submit", step: "s", attempt: "a", output });
      expect(holed.ok).toBe(false);
      if (!holed.ok) expect(holed.error).toMatch(/output: Invalid type: expected a JSON value/);
    }
    const bad = parseToolCall({
      action: "submit",
      step: "s",
      attempt: "a",
      output: { n: Number.NaN },
    });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error).toMatch(/output: Invalid type: expected a JSON value/);
  });

  it("refuses a value nested deeper than the host checks, saying how to send it", () => {
    const nest = (levels: number): unknown => {
      let value: unknown = "leaf";
      for (let i = 0; i < levels; i++) value = i % 2 ? [value] : { child: value };
      return value;
    };
    const atLimit = nest(MAX_JSON_DEPTH);
    const ok = parseToolCall({ action: "submit", step: "s", attempt: "a", output: atLimit });
    expect(ok.ok).toBe(true);
    expect(v.safeParse(JsonValueSchema, atLimit).success).toBe(true);
    for (const levels of [MAX_JSON_DEPTH + 1, 5000]) {
      const deep = nest(levels);
      const submit = parseToolCall({ action: "submit", step: "s", attempt: "a", output: deep });
      expect(submit).toStrictEqual({
        ok: false,
        error:
          `Invalid workflow tool call for action "submit": output: nested deeper than ${MAX_JSON_DEPTH} arrays or objects; send a flatter value (e.g. a list of items, each naming its parent)`,
      });
      const update = parseToolCall({
        action: "update",
        step: "s",
        attempt: "a",
        update: { type: "status", data: { deep } },
      });
      expect(update.ok).toBe(false);
      if (!update.ok) expect(update.error).toMatch(/update\.data: nested deeper than 200/);
    }
  });
});

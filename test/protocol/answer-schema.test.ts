import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { AnswerSchemaSchema, checkAnswer } from "../../src/protocol/answer-schema.ts";

describe("checkAnswer()", () => {
  const schema = {
    type: "object" as const,
    properties: {
      approved: { type: "boolean" as const },
      note: { type: "string" as const, minLength: 2, maxLength: 5 },
      level: { enum: ["low", "high"] },
      count: { type: "integer" as const, minimum: 1, maximum: 3 },
      tags: { type: "array" as const, items: { type: "string" as const }, maxItems: 2 },
    },
    required: ["approved"],
    additionalProperties: false,
  };

  it("accepts a matching answer and names the first wrong field", () => {
    expect(checkAnswer(schema, { approved: true, note: "ok", tags: ["a"] })).toBe(null);
    expect(checkAnswer(schema, {})).toBe("answer.approved: missing required field");
    expect(checkAnswer(schema, { approved: 1 })).toBe(
      "answer.approved: expected a boolean, got a number",
    );
    expect(checkAnswer(schema, { approved: true, note: "toolong" })).toBe(
      "answer.note: expected at most 5 characters, got 7",
    );
    expect(checkAnswer(schema, { approved: true, level: "mid" })).toBe(
      'answer.level: expected one of "low", "high"',
    );
    expect(checkAnswer(schema, { approved: true, count: 1.5 })).toBe(
      "answer.count: expected an integer, got a number",
    );
    expect(checkAnswer(schema, { approved: true, count: 4 })).toBe(
      "answer.count: expected at most 3, got 4",
    );
    expect(checkAnswer(schema, { approved: true, tags: ["a", 2] })).toBe(
      "answer.tags[1]: expected a string, got a number",
    );
    expect(checkAnswer(schema, { approved: true, x: 1 })).toContain(
      "answer.x: unknown field (expected approved, note, level, count, tags)",
    );
    expect(checkAnswer(schema, [])).toBe("answer: expected an object, got an array");
    expect(checkAnswer({ type: ["string", "null"] }, null)).toBe(null);
  });

  it("refuses a schema with a keyword it does not know", () => {
    expect(v.safeParse(AnswerSchemaSchema, schema).success).toBe(true);
    expect(v.safeParse(AnswerSchemaSchema, { type: "string", pattern: "^a" }).success).toBe(false);
    expect(v.safeParse(AnswerSchemaSchema, { type: "text" }).success).toBe(false);
  });
});

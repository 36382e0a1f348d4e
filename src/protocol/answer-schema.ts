/**
 * The optional shape a checkpoint declares for its answer: a small subset of JSON Schema
 * (`type`, `properties`, `required`, `additionalProperties`, `items`, `enum` and the length,
 * range and size limits). It is plain data saved with the waiting checkpoint, so the host checks
 * an answer before it records it without running workflow code, and a client may show it.
 */
import * as v from "valibot";
import { canonicalJson, type JsonValue } from "./canonical-json.ts";
import { JsonValueSchema } from "./run-facts.ts";
import { strictObject } from "./fields.ts";

export const ANSWER_TYPES = [
  "string",
  "number",
  "integer",
  "boolean",
  "object",
  "array",
  "null",
] as const;
export type AnswerType = (typeof ANSWER_TYPES)[number];

export interface AnswerSchema {
  type?: AnswerType | AnswerType[];
  description?: string;
  enum?: JsonValue[];
  properties?: { [name: string]: AnswerSchema };
  required?: string[];
  additionalProperties?: boolean;
  items?: AnswerSchema;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
}

const Size = v.pipe(v.number(), v.safeInteger(), v.minValue(0));
const Bound = v.pipe(v.number(), v.finite());

/** Validates a declared answer schema; unknown keywords are refused so none is silently ignored. */
export const AnswerSchemaSchema: v.GenericSchema<AnswerSchema> = v.lazy(() =>
  strictObject({
    type: v.optional(v.union([
      v.picklist(ANSWER_TYPES),
      v.pipe(v.array(v.picklist(ANSWER_TYPES)), v.minLength(1)),
    ])),
    description: v.optional(v.pipe(v.string(), v.maxLength(4000))),
    enum: v.optional(v.pipe(v.array(JsonValueSchema), v.minLength(1), v.maxLength(256))),
    properties: v.optional(v.record(v.string(), AnswerSchemaSchema)),
    required: v.optional(v.array(v.string())),
    additionalProperties: v.optional(v.boolean()),
    items: v.optional(AnswerSchemaSchema),
    minLength: v.optional(Size),
    maxLength: v.optional(Size),
    minimum: v.optional(Bound),
    maximum: v.optional(Bound),
    minItems: v.optional(Size),
    maxItems: v.optional(Size),
  }) as v.GenericSchema<AnswerSchema>
);

/**
 * The first way `value` does not match `schema`, as one line naming the field
 * (`answer.reason: expected a string`), or null when it matches.
 */
export function checkAnswer(
  schema: AnswerSchema,
  value: JsonValue,
  path = "answer",
): string | null {
  const types = schema.type === undefined
    ? null
    : Array.isArray(schema.type)
    ? schema.type
    : [schema.type];
  if (types && !types.some((type) => hasType(value, type))) {
    return `${path}: expected ${types.map(article).join(" or ")}, got ${describe(value)}`;
  }
  if (
    schema.enum && !schema.enum.some((allowed) => canonicalJson(allowed) === canonicalJson(value))
  ) {
    const shown = schema.enum.map((allowed) => JSON.stringify(allowed)).join(", ");
    return `${path}: expected one of ${shown}`;
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (schema.minLength !== undefined && length < schema.minLength) {
      return `${path}: expected at least ${schema.minLength} characters, got ${length}`;
    }
    if (schema.maxLength !== undefined && length > schema.maxLength) {
      return `${path}: expected at most ${schema.maxLength} characters, got ${length}`;
    }
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) {
      return `${path}: expected at least ${schema.minimum}, got ${value}`;
    }
    if (schema.maximum !== undefined && value > schema.maximum) {
      return `${path}: expected at most ${schema.maximum}, got ${value}`;
    }
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) {
      return `${path}: expected at least ${schema.minItems} items, got ${value.length}`;
    }
    if (schema.maxItems !== undefined && value.length > schema.maxItems) {
      return `${path}: expected at most ${schema.maxItems} items, got ${value.length}`;
    }
    if (schema.items) {
      for (let i = 0; i < value.length; i++) {
        const problem = checkAnswer(schema.items, value[i], `${path}[${i}]`);
        if (problem) return problem;
      }
    }
  }
  if (isRecord(value)) return checkObject(schema, value, path);
  return null;
}

function checkObject(
  schema: AnswerSchema,
  value: { [key: string]: JsonValue },
  path: string,
): string | null {
  for (const name of schema.required ?? []) {
    if (!(name in value)) return `${path}.${name}: missing required field`;
  }
  for (const [name, field] of Object.entries(value)) {
    const declared = schema.properties?.[name];
    if (declared) {
      const problem = checkAnswer(declared, field, `${path}.${name}`);
      if (problem) return problem;
    } else if (schema.additionalProperties === false) {
      const known = Object.keys(schema.properties ?? {});
      return `${path}.${name}: unknown field${
        known.length ? ` (expected ${known.join(", ")})` : ""
      }`;
    }
  }
  return null;
}

function hasType(value: JsonValue, type: AnswerType): boolean {
  switch (type) {
    case "null":
      return value === null;
    case "array":
      return Array.isArray(value);
    case "object":
      return isRecord(value);
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "number":
      return typeof value === "number";
    case "string":
      return typeof value === "string";
    case "boolean":
      return typeof value === "boolean";
  }
}

function describe(value: JsonValue): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return article(typeof value as AnswerType);
}

function article(type: AnswerType): string {
  if (type === "null") return "null";
  return `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
}

function isRecord(value: JsonValue): value is { [key: string]: JsonValue } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

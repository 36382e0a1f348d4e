/**
 * How deep a JSON value a client hands the host may nest: at most `MAX_JSON_DEPTH` arrays or
 * objects. It holds for every such value (a run's or a schedule's input, an answer, a submission,
 * an update's data, an effect's output, a controller's spec or receipt): the host's schemas, and
 * every part that reads a stored value back (the worker, the extension, the viewer), walk it a few
 * stack frames a level, so a deeper value is refused where it enters and none is ever stored.
 */
import * as v from "valibot";
import { type JsonValue, MAX_JSON_DEPTH } from "./canonical-json.ts";
import { JsonValueSchema } from "./run-facts.ts";

/** The one refusal of a value past the bound, after its field or option name. */
export const JSON_TOO_DEEP = `nested deeper than ${MAX_JSON_DEPTH} arrays or objects; ` +
  "send a flatter value (e.g. a list of items, each naming its parent)";

/**
 * True when `value` nests at most `MAX_JSON_DEPTH` arrays or objects. Iterative, so a value of
 * any depth is answered; a cycle reads as too deep (depth first, it passes the bound at once).
 */
export function withinJsonDepth(value: unknown): boolean {
  return problemOf(value, false) === null;
}

/**
 * What JSON.parse's `value` cannot be sent as (past the bound, or a number read as infinite), as
 * the line `parseJsonText` gives; null when it can. For a path that takes text failing to parse as
 * text, not as a refusal.
 */
export function parsedJsonProblem(value: unknown): string | null {
  return problemOf(value, true);
}

/** Past the bound, or (with `numbers`) a number JSON cannot carry; null when neither. */
function problemOf(value: unknown, numbers: boolean): string | null {
  const notFinite = (item: unknown) =>
    numbers && typeof item === "number" && !Number.isFinite(item);
  if (notFinite(value)) return NOT_FINITE;
  if (typeof value !== "object" || value === null) return null;
  const nodes: object[] = [value];
  const depths: number[] = [1];
  while (nodes.length > 0) {
    const node = nodes.pop()!;
    const depth = depths.pop()!;
    if (depth > MAX_JSON_DEPTH) return JSON_TOO_DEEP;
    const items: unknown[] = Array.isArray(node) ? node : Object.values(node);
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (notFinite(item)) return NOT_FINITE;
      if (typeof item === "object" && item !== null) {
        nodes.push(item);
        depths.push(depth + 1);
      }
    }
  }
  return null;
}

/** JSON.parse reads a number too large for a double (1e999) as Infinity, which JSON cannot send. */
const NOT_FINITE = "a number is too large for JSON (it reads as infinite); give a finite number";

/**
 * A JSON value from a client: `JsonValueSchema` within the bound. The bound is checked first, so
 * a value some thousands of levels deep is refused with its field's path before the recursive
 * walk could overflow the stack.
 */
export const ClientJsonValueSchema: v.GenericSchema<JsonValue> = v.pipe(
  v.custom<JsonValue>(withinJsonDepth, JSON_TOO_DEEP),
  JsonValueSchema,
);

/** Raised by `parseJsonText`; the message is one line (JSON.parse's first, or the bound's). */
export class JsonTextError extends SyntaxError {
  override name = "JsonTextError";
}

/**
 * JSON text a person typed or a file holds, parsed as a value for the host: JSON.parse takes any
 * depth and reads 1e999 as Infinity, so both are checked here and a command line says so before
 * anything is sent.
 */
export function parseJsonText(text: string): JsonValue {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new JsonTextError((error as Error).message.split("\n")[0]);
  }
  const problem = parsedJsonProblem(value);
  if (problem !== null) throw new JsonTextError(problem);
  return value as JsonValue;
}

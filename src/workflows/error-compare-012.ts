/**
 * 0.12 gave a result's `error` as a string; here it is `{code, message}` that reads as its message
 * wherever a string is made of it (result-error.ts), except for `typeof` and `===`/`!==`, which no
 * object can answer like a string. Where workflow code makes such a comparison visibly on a result
 * record (`typeof results.check.error === "string"`, `ctx.results["check"].error === "boom"`,
 * also reversed), the load fails naming the callback and what to compare instead. It is always a
 * mistake here too: such a comparison is false for every result of this version. Comparisons
 * through a variable (`const r = results.check; r.error === ...`) are not visible and not refused.
 */
import { DEFINITION_BRAND } from "./types.ts";

// An optional one-segment owner (`ctx.`, `state.`), `results`, one key, then `.error`.
const RESULT_ERROR = String
  .raw`(?<![\w$.])(?:[\w$]+\s*\??\.\s*)?results\s*(?:\??\.\s*[\w$]+|\??\.?\s*\[[^\]\n]{1,200}\])\s*\??\.\s*error\b(?!\s*\??\.)`;
const STRING = String.raw`(["'\x60])`;
const PATTERNS = [
  new RegExp(String.raw`typeof\s+\(?\s*${RESULT_ERROR}\s*\)?\s*(?:===?|!==?)\s*${STRING}string\1`),
  new RegExp(String.raw`${STRING}string\1\s*(?:===?|!==?)\s*typeof\s+\(?\s*${RESULT_ERROR}`),
  new RegExp(String.raw`(?<!typeof\s{0,16}\(?\s{0,16})${RESULT_ERROR}\s*(?:===|!==)\s*["'\x60]`),
  new RegExp(String.raw`["'\x60]\s*(?:===|!==)\s*${RESULT_ERROR}`),
];

/** The path of the first callback that compares a result's error as a string, else null. */
export function findErrorStringComparison(spec: object): string | null {
  const seen = new Set<object>();
  const walk = (value: unknown, path: string, depth: number): string | null => {
    if (typeof value === "function") {
      const source = Function.prototype.toString.call(value);
      return source.includes("error") && PATTERNS.some((p) => p.test(source)) ? path : null;
    }
    // A nested definition (an include by object) was checked by its own defineWorkflow.
    if (
      typeof value !== "object" || value === null || depth > 5 || seen.has(value) ||
      (value as Record<symbol, unknown>)[DEFINITION_BRAND] === true
    ) {
      return null;
    }
    seen.add(value);
    for (const [key, child] of Object.entries(value)) {
      const found = walk(child, path === "" ? key : `${path}.${key}`, depth + 1);
      if (found !== null) return found;
    }
    return null;
  };
  return walk(spec, "", 0);
}

export const ERROR_STRING_COMPARISON =
  "compares a result's error as a string with typeof or ===/!== (0.12's error was a string; here it is {code, message}, which they never see as one): compare results.<id>.error.message, or route on results.<id>.error.code";

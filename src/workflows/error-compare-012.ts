/**
 * 0.12 gave a result's `error` as a string; here it is `{code, message}` that reads as its message
 * wherever a string is made of it (result-error.ts), except where JavaScript compares without
 * converting: `typeof`, `===`/`!==`, `switch`, `Object.is`, and the identity lookups of
 * `includes`/`indexOf`/`has`. No object can answer those like a string, so code that makes such a
 * comparison on an error fails the load, naming where and what to compare instead; it is always
 * a mistake here too (false for every result of this version).
 *
 * The check reads source text, conservatively: any `.error` (on a result record, a variable
 * holding one, a helper's parameter, a child workflow record) and any name that holds one (`const
 * e = r.error`, `const {error: e} = r`, `const {error} = r`, a same-file helper's parameter given
 * an error) counts as an error. It runs on code that reads results (`results`, or a controller's
 * `ensure(...)` records); there an unrelated `.error` compared with a string literal (a parsed
 * JSON field) is refused too, and the message says how to compare instead.
 */
import { DEFINITION_BRAND } from "./types.ts";

/** Text that may hold a result's error: it reads `results` or a controller's `ensure` record. */
const READS_RESULTS = /(?<![\w$])results(?![\w$])|\.ensure\s*\(/;
const ID = String.raw`[A-Za-z_$][\w$]*`;
/** A member chain before the last name: `ctx.results["a"]?.`, `r.`, `state.results.a.`. */
const CHAIN = String.raw`(?<![\w$.])(?:${ID}(?:\s*\??\.?\s*\[[^\]\n]{1,200}\])*\s*\??\.\s*)+`;
/** Not followed by a member access or a call: `error.code`, `error.includes(...)` are fine. */
const END = String.raw`(?![\w$])(?!\s*(?:\?\.|\.|\[|\())`;

/** Whether `source` reads result records (`results`, a controller's `ensure(...)` records). */
export function readsResultsIn(source: string): boolean {
  return READS_RESULTS.test(source);
}

/** `aliases` holds names (`e`) and helpers that return an error (`errorOf()`). */
function errorExpression(aliases: ReadonlySet<string>): string {
  const escape = (n: string) => n.replace(/[$()]/g, "\\$&");
  const names = [...aliases].filter((n) => !n.endsWith("()")).map(escape).join("|");
  const helpers = [...aliases].filter((n) => n.endsWith("()")).map((n) => escape(n.slice(0, -2)))
    .join("|");
  // `<chain>.error`, a bare alias (`e`, a destructured `error`), or `errorOf(...)`.
  return String.raw`(?:${CHAIN}error|(?<![\w$.])(?:${names || "(?!)"})|(?<![\w$.])(?:${
    helpers || "(?!)"
  })\s*\([^()]*\))${END}`;
}

/** Names in `source` that hold an error: declared from one, destructured, or a helper's param. */
function errorAliases(source: string): Set<string> {
  const aliases = new Set<string>();
  // `{ error }` / `{ a, error = x }` as a pattern (a declaration, a parameter, a type annotation).
  if (
    new RegExp(String.raw`\{[^{}]*(?<![\w$.])error\s*(?:[,=][^{}]*)?\}\s*(?:=(?!=)|\)|:)`).test(
      source,
    )
  ) {
    aliases.add("error");
  }
  for (let round = 0; round < 4; round++) {
    const before = aliases.size;
    const expr = errorExpression(aliases);
    for (
      const m of source.matchAll(new RegExp(String.raw`(?<![\w$.])(${ID})\s*=(?!=)\s*${expr}`, "g"))
    ) {
      aliases.add(m[1]);
    }
    for (
      const m of source.matchAll(
        new RegExp(String.raw`(?<![\w$.])error\s*:\s*(${ID})\s*(?=[,}=])`, "g"),
      )
    ) {
      aliases.add(m[1]);
    }
    // A helper that returns an error: what a call of it gives is one.
    for (
      const m of source.matchAll(
        new RegExp(
          String
            .raw`(?:(?<![\w$.])(${ID})\s*=\s*(?:async\s*)?(?:\([^()]*\)|${ID})\s*=>\s*|function\s+(${ID})\s*\([^()]*\)\s*\{\s*return\s+)${expr}`,
          "g",
        ),
      )
    ) {
      aliases.add(`${m[1] ?? m[2]}()`);
    }
    // A helper defined in the same text and called with an error: its parameter holds one.
    const argument = new RegExp(String.raw`^\s*${expr}\s*$`);
    for (
      const call of source.matchAll(new RegExp(String.raw`(?<![\w$.])(${ID})\s*\(([^()]*)\)`, "g"))
    ) {
      const index = call[2].split(",").findIndex((arg) => argument.test(arg));
      if (index < 0) continue;
      const param = helperParameter(source, call[1], index);
      if (param !== null) aliases.add(param);
    }
    if (aliases.size === before) break;
  }
  aliases.delete("");
  return aliases;
}

function helperParameter(source: string, name: string, index: number): string | null {
  const escaped = name.replace(/\$/g, "\\$");
  const definition = new RegExp(
    String
      .raw`(?:function\s+${escaped}|(?<![\w$.])${escaped}\s*=\s*(?:async\s*)?(?:function\s*${ID}?)?|(?<![\w$.])${escaped})\s*\(([^()]*)\)\s*(?:=>|\{|:)`,
  ).exec(source);
  if (definition === null) return null;
  const param = definition[1].split(",")[index]?.replace(/[:=?].*$/s, "").trim();
  return param !== undefined && new RegExp(`^${ID}$`).test(param) ? param : null;
}

/**
 * The first comparison in `source` that treats a result's error as a string (a short excerpt with
 * its line number), else null. `source` is a callback's or a file's text; `readsResults` says
 * whether the code around it reads result records (by default: whether `source` does).
 */
export function findErrorComparisonInText(source: string, readsResults?: boolean): string | null {
  if (!source.includes("error") || !(readsResults ?? readsResultsIn(source))) return null;
  const e = errorExpression(errorAliases(source));
  const notAbsent = String.raw`(?!\s*(?:undefined|null|void)\b)`;
  const patterns = [
    String.raw`typeof\s*\(?\s*${e}\s*\)?\s*[!=]==?\s*(["'\x60])(?!undefined\1)`,
    String.raw`(["'\x60])(?!undefined\1)[\w ]*\1\s*[!=]==?\s*typeof\s*\(?\s*${e}`,
    String.raw`switch\s*\(\s*(?:typeof\s*)?\(?\s*${e}\s*\)?\s*\)`,
    String.raw`(?<!typeof\s*\(?\s*)${e}\s*[!=]==${notAbsent}`,
    String.raw`(?<!(?:undefined|null|void 0)\s*)[!=]==\s*${e}`,
    String.raw`(?:Object\.is\s*\([^()]*|\.(?:includes|indexOf|lastIndexOf|has)\s*\(\s*)${e}`,
  ];
  let first: RegExpExecArray | null = null;
  for (const p of patterns) {
    const m = new RegExp(p).exec(source);
    if (m !== null && (first === null || m.index < first.index)) first = m;
  }
  if (first === null) return null;
  const line = source.slice(0, first.index).split("\n").length;
  // The comparison up to the end of its expression (a rough cut: `;`, `?`, `,`, the line's end).
  const rest = /^[^;\n?,]*/.exec(source.slice(first.index))?.[0] ?? first[0];
  const excerpt = (rest.length > first[0].length ? rest : first[0]).replace(/\s+/g, " ").trim()
    .slice(0, 80);
  return `line ${line} (\`${excerpt}\`)`;
}

/** The path of the first callback that compares a result's error as a string, else null. */
export function findErrorStringComparison(spec: object): string | null {
  const seen = new Set<object>();
  const walk = (value: unknown, path: string, depth: number): string | null => {
    if (typeof value === "function") {
      const source = Function.prototype.toString.call(value);
      return findErrorComparisonInText(source) === null ? null : path;
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
  "compares a result's error as a string with typeof, ===/!==, switch or an identity lookup (0.12's error was a string; here it is {code, message}, which they never see as one): compare results.<id>.error.message (or String(error)), or route on results.<id>.error.code";

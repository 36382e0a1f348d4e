/**
 * The two forms of a shell node's `updates.parseLine`. This version's form gets the line's text;
 * a parser written the 0.12 way gets the line as `{stream, text}` and keeps 0.12's default of
 * stdout only. A parser is in the 0.12 form when its first parameter is destructured
 * (`({ stream, text }, ctx) => ...`, the form 0.12 documented) or is read as `.text` / `.stream`
 * (`(line) => line.text`): a string has neither, so no parser of this version's form reads them.
 */
import type { ShellUpdates } from "./types.ts";

export function takesLineObject(parseLine: (...args: never[]) => unknown): boolean {
  const source = Function.prototype.toString.call(parseLine);
  const first = firstParameter(source);
  if (first === null) return false;
  if (first.pattern) return true;
  const name = first.name.replace(/\$/g, "\\$");
  const rest = source.slice(first.end);
  return new RegExp(
    // line.text, line?.stream, line["text"], or `const { text } = line`
    `(?<![\\w$.])${name}\\s*(?:\\??\\.\\s*(?:text|stream)\\b|\\[\\s*["'](?:text|stream)["']\\s*\\])|\\}\\s*=\\s*${name}\\s*[;,)\\n]`,
  ).test(rest);
}

/**
 * The first parameter of a function's source: `{pattern: true}` when it is an object pattern, its
 * name when it is a plain identifier; null when there is none. Handles arrows (with or without
 * parentheses), `function` expressions and method shorthand (`parseLine(line) {...}`).
 */
function firstParameter(
  source: string,
): { pattern: true; end: number } | { pattern: false; name: string; end: number } | null {
  const bare = /^\s*(?:async\s+)?([A-Za-z_$][\w$]*)\s*=>/.exec(source);
  if (bare) return { pattern: false, name: bare[1], end: bare[0].length };
  const head = /^\s*(?:async\b\s*)?(?:function\b\s*\*?\s*[\w$]*|\*?\s*[\w$]+)?\s*\(\s*/.exec(
    source,
  );
  if (!head) return null;
  const end = head[0].length;
  if (source[end] === "{") return { pattern: true, end };
  const name = /^[A-Za-z_$][\w$]*/.exec(source.slice(end));
  return name ? { pattern: false, name: name[0], end: end + name[0].length } : null;
}

/** The streams whose lines the parser gets: as declared, else by its form. */
export function updateStreams(updates: ShellUpdates): ("stdout" | "stderr")[] {
  return updates.streams ??
    (takesLineObject(updates.parseLine) ? ["stdout"] : ["stdout", "stderr"]);
}

/**
 * The two forms of a shell node's `updates.parseLine`. This version's form gets the line's text;
 * a parser that destructures its first parameter (`({ stream, text }, ctx) => ...`, the form 0.12
 * documented) gets the line as `{stream, text}` and keeps 0.12's default of stdout only.
 */
import type { ShellUpdates } from "./types.ts";

export function takesLineObject(parseLine: (...args: never[]) => unknown): boolean {
  return /^(?:async\s*)?(?:function\b[^(]*)?\(\s*\{/.test(
    Function.prototype.toString.call(parseLine),
  );
}

/** The streams whose lines the parser gets: as declared, else by its form. */
export function updateStreams(updates: ShellUpdates): ("stdout" | "stderr")[] {
  return updates.streams ??
    (takesLineObject(updates.parseLine) ? ["stdout"] : ["stdout", "stderr"]);
}

/**
 * Text the CLI and the viewer print carries what workflows wrote (titles, status details, error
 * and notify messages, decision presentations), and a terminal acts on control characters in it:
 * an escape sequence can erase lines, move the cursor, set the window title or write the
 * clipboard, a carriage return can overwrite what a line said, and a bidirectional override can
 * make a line read differently from what it holds. So every line the CLI prints and every segment
 * the viewer draws goes through `terminalSafe`, which shows such a character as its `\uXXXX`
 * escape instead (inside JSON output that is the same value). Only the CLI's own sequences pass:
 * newlines and tabs, and when asked the colours of src/cli/cli-style.ts (and `\r` + erase-line
 * for the redrawn progress line).
 */

// deno-lint-ignore no-control-regex -- C0 (but tab and newline), DEL, C1, bidi embeddings/isolates
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

/** The SGR codes cli-style.ts paints with (reset, bold, dim, the five colours). */
// deno-lint-ignore no-control-regex -- the CLI's own escape sequences
const OWN_COLOUR = /\x1b\[(?:0|1|2|31|32|33|35|36)m/y;
/** What a redrawn progress line starts with: back to column 0, erase the line. */
// deno-lint-ignore no-control-regex -- the CLI's own escape sequences
const OWN_REDRAW = /\r\x1b\[2K/y;

export interface TerminalSafeOptions {
  /** Keep cli-style.ts's colour sequences (stdout with colour on). Default false. */
  colour?: boolean;
  /** Keep `\r` + erase-line (the redrawn progress line). Default false. */
  redraw?: boolean;
}

export function terminalSafe(text: string, options: TerminalSafeOptions = {}): string {
  UNSAFE.lastIndex = 0;
  if (!UNSAFE.test(text)) return text;
  let out = "";
  let last = 0;
  UNSAFE.lastIndex = 0;
  for (let match = UNSAFE.exec(text); match !== null; match = UNSAFE.exec(text)) {
    const at = match.index;
    const own = ownSequence(text, at, options);
    out += text.slice(last, at) + (own ?? escaped(text.charCodeAt(at)));
    last = at + (own?.length ?? 1);
    UNSAFE.lastIndex = last;
  }
  return out + text.slice(last);
}

function ownSequence(text: string, at: number, options: TerminalSafeOptions): string | null {
  return (options.colour ? sticky(OWN_COLOUR, text, at) : null) ??
    (options.redraw ? sticky(OWN_REDRAW, text, at) : null);
}

function sticky(pattern: RegExp, text: string, at: number): string | null {
  pattern.lastIndex = at;
  return pattern.exec(text)?.[0] ?? null;
}

function escaped(code: number): string {
  return `\\u${code.toString(16).padStart(4, "0")}`;
}

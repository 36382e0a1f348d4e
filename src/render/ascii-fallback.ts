/**
 * Text for a terminal whose locale is not UTF-8 (`LC_ALL=C`, an unset locale): there a glyph
 * like ✓ or a box line prints as mojibake. Every non-ASCII character pi-workflows prints has an
 * ASCII stand-in of the same width (drawings keep their layout); anything else that is not
 * ASCII (workflow text) becomes `?`, as the C library shows what it cannot.
 */

/** The locale category that decides the character set, as the C library picks it. */
export function localeIsUtf8(env: NodeJS.ProcessEnv): boolean {
  const locale = env.LC_ALL || env.LC_CTYPE || env.LANG || "";
  return /utf-?8/i.test(locale);
}

const ONE_COLUMN: Record<string, string> = {
  "…": ".",
  "·": "-",
  "•": "*",
  "—": "-",
  "–": "-",
  "‘": "'",
  "’": "'",
  "“": '"',
  "”": '"',
  "→": ">",
  "›": ">",
  "»": ">",
  "▶": ">",
  "▷": ">",
  "↳": ">",
  "←": "<",
  "↑": "^",
  "↓": "v",
  "▼": "v",
  "✓": "+",
  "✗": "x",
  "×": "x",
  "⧗": "x",
  "⊘": "-",
  "↺": "~",
  "↯": "~",
  "◐": "*",
  "⏸": "?",
  "‖": "=",
  "↻": "#",
  "◷": "@",
  "●": "o",
  "ƒ": "f",
  "◆": "#",
  "◈": "&",
  "◇": "<",
  "✎": "/",
  "⚙": "*",
  "■": "#",
  "█": "#",
  "░": "-",
  "µ": "u",
  "²": "2",
};

/** Wider stand-ins where prose reads better and no drawing depends on the width. */
const PROSE: Record<string, string> = { "…": "...", "→": "->" };

const VERTICAL = new Set("│┃╵╹╷╻");
const HORIZONTAL = new Set("─╴╶");
const HEAVY_HORIZONTAL = new Set("━╸╺");

/**
 * `text` in ASCII. `keepWidth` (drawings, fixed columns): one column for one; otherwise `…`
 * becomes `...` and `→` `->`.
 */
export function asciiText(text: string, options: { keepWidth?: boolean } = {}): string {
  if (!/[\u0080-\uffff]/.test(text)) return text;
  let out = "";
  for (const ch of text) {
    if (ch.charCodeAt(0) < 0x80) out += ch;
    else if (!options.keepWidth && ch in PROSE) out += PROSE[ch];
    else out += ONE_COLUMN[ch] ?? boxLine(ch) ?? "?";
  }
  return out;
}

/** Box drawing (U+2500-U+257F): lines keep their direction, the heavy border stays marked. */
function boxLine(ch: string): string | null {
  const code = ch.codePointAt(0)!;
  if (code < 0x2500 || code > 0x257f) return null;
  if (VERTICAL.has(ch)) return "|";
  if (HORIZONTAL.has(ch)) return "-";
  if (HEAVY_HORIZONTAL.has(ch)) return "=";
  return "+";
}

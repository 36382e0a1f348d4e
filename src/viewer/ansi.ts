/**
 * Style tokens to terminal escapes. With colour off (NO_COLOR, `--once`, not a TTY) only the
 * text remains; the active card stays distinguishable by its heavy border and the replay step
 * by its `▶` marker, so nothing depends on colour alone.
 */
import { clipLine, plainText, type Style, type StyledLine } from "../render/mod.ts";
import { terminalSafe } from "../render/terminal-safe.ts";
import { asciiText } from "../render/ascii-fallback.ts";

const SGR: Record<Style, string> = {
  "": "",
  title: "1",
  muted: "2",
  label: "36",
  edge: "2",
  taken: "1;34",
  active: "1;33",
  selected: "1;7",
  running: "33",
  waiting: "35",
  ok: "32",
  failed: "31",
  warn: "33",
  heading: "1",
};

export function colorEnabled(env: NodeJS.ProcessEnv, isTty: boolean): boolean {
  return isTty && !("NO_COLOR" in env && env.NO_COLOR !== "");
}

/**
 * One line for the terminal, cut to `width` columns; `ascii` (a locale that is not UTF-8):
 * glyphs and box lines as their one-column ASCII stand-ins.
 */
export function toTerminal(
  styled: StyledLine,
  width: number,
  color: boolean,
  ascii = false,
): string {
  // Workflow text (titles, details, errors) must not act on the terminal; escape it first so
  // the cut counts what is shown.
  const shown = (text: string) =>
    ascii ? asciiText(terminalSafe(text), { keepWidth: true }) : terminalSafe(text);
  const clipped = clipLine(styled.map((seg) => ({ ...seg, text: shown(seg.text) })), width);
  if (!color) return plainText(clipped);
  let out = "";
  for (const seg of clipped) {
    const code = SGR[seg.style];
    out += code ? `\x1b[${code}m${seg.text}\x1b[0m` : seg.text;
  }
  return out;
}

/**
 * The CLI's glyphs and colours, in one place so every command reads the same: a glyph has a
 * Unicode form and an ASCII fallback, a tone names a meaning (never a colour). Nothing depends
 * on colour alone: the words and glyphs carry the state, colour only helps the eye.
 */
import { asciiText } from "../render/ascii-fallback.ts";
import { PLAIN_TERMINAL, type Terminal } from "./terminal.ts";

const GLYPHS = {
  started: ["▶", ">"],
  ok: ["✓", "+"],
  failed: ["✗", "x"],
  timedOut: ["⧗", "x"],
  cancelled: ["⊘", "-"],
  interrupted: ["↺", "~"],
  running: ["◐", "*"],
  queued: ["·", "."],
  waiting: ["⏸", "?"],
  paused: ["‖", "="],
  blocked: ["!", "!"],
  answered: ["◆", "#"],
  resumed: ["▷", ">"],
  update: ["·", "-"],
  output: ["›", ">"],
  bullet: ["•", "*"],
  dash: ["—", "-"],
  ellipsis: ["…", "..."],
  separator: ["·", "-"],
} as const;

export type GlyphName = keyof typeof GLYPHS;

export type Tone = "ok" | "failed" | "running" | "waiting" | "warn" | "muted" | "bold" | "label";

const SGR: Record<Tone, string> = {
  ok: "32",
  failed: "31",
  running: "33",
  waiting: "35",
  warn: "33",
  muted: "2",
  bold: "1",
  label: "36",
};

export interface CliStyle {
  readonly terminal: Terminal;
  glyph(name: GlyphName): string;
  /** `text` in the tone's colour when colour is on; the text unchanged otherwise. */
  paint(tone: Tone, text: string): string;
  /** `text` in ASCII (`render/ascii-fallback.ts`) when the locale is not UTF-8. */
  text(text: string): string;
}

export function cliStyle(terminal: Terminal): CliStyle {
  const index = terminal.unicode ? 0 : 1;
  return {
    terminal,
    glyph: (name) => GLYPHS[name][index],
    paint: (tone, text) =>
      terminal.color && text !== "" ? `\x1b[${SGR[tone]}m${text}\x1b[0m` : text,
    text: (text) => terminal.unicode ? text : asciiText(text),
  };
}

/** Not a TTY, no colour, UTF-8: what tests and JSON paths use. */
export const PLAIN_STYLE: CliStyle = cliStyle(PLAIN_TERMINAL);

/** Removes colour escapes (for measuring and for tests). */
export function stripAnsi(text: string): string {
  // deno-lint-ignore no-control-regex -- colour escapes start with ESC
  return text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, "");
}

/**
 * Where the CLI writes: results to stdout (plain text for people, one JSON document with
 * `--json`), problems to stderr as one line. Errors never carry a stack trace. A reader that
 * goes away (`pi-workflows start --wait | head`) ends the command quietly, as git does.
 */
import { canonicalJson } from "../protocol/canonical-json.ts";
import { type CliStyle, cliStyle } from "./cli-style.ts";
import { detectTerminal } from "./terminal.ts";
import { terminalSafe } from "../render/terminal-safe.ts";
import { asciiText } from "../render/ascii-fallback.ts";

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** How stdout shows glyphs and colour (the plain style when absent). */
  readonly style?: CliStyle;
  /** Writes `text` to stdout as it is, without a newline (a TTY's redrawn progress line). */
  write?(text: string): void;
}

let stdoutStyle: CliStyle | undefined;

/**
 * Every line leaves through `terminalSafe`: workflow text must not drive the terminal; and, in a
 * locale that is not UTF-8, through `asciiText`, so no glyph, punctuation or workflow text
 * prints as mojibake (JSON is escaped instead, see `printJson`).
 */
export const processIo: CliIo = {
  out: (text) =>
    process.stdout.write(withNewline(forLocale(terminalSafe(text, { colour: stdoutColour() })))),
  err: (text) => process.stderr.write(withNewline(forLocale(terminalSafe(text)))),
  write: (text) =>
    process.stdout.write(forLocale(terminalSafe(text, { colour: stdoutColour(), redraw: true }))),
  get style() {
    return stdoutStyle ??= cliStyle(detectTerminal(process.stdout, process.env));
  },
};

function forLocale(text: string): string {
  return processIo.style!.terminal.unicode ? text : asciiText(text);
}

function stdoutColour(): boolean {
  return processIo.style!.terminal.color;
}

function withNewline(text: string): string {
  return text.endsWith("\n") ? text : `${text}\n`;
}

/** The exit status of a process whose reader closed the pipe (128 + SIGPIPE, as git's). */
export const CLOSED_PIPE_EXIT = 141;

/**
 * Ends the process quietly when stdout or stderr loses its reader (EPIPE), instead of Node's
 * unhandled-error stack; any other failure of those streams leaves nowhere to report it, so it
 * ends the process with exit 1. Installed once by the program entry. A run the command started
 * or followed goes on in the host.
 */
export function exitQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (error: NodeJS.ErrnoException) => {
      process.exit(error.code === "EPIPE" ? CLOSED_PIPE_EXIT : 1);
    });
  }
}

/**
 * Stable, sorted JSON for scripts (one line). In a locale that is not UTF-8 every non-ASCII
 * character is a `\uXXXX` escape: the same JSON value, in ASCII.
 */
export function printJson(io: CliIo, value: unknown): void {
  const json = canonicalJson(value);
  io.out(io.style?.terminal.unicode === false ? escapeNonAscii(json) : json);
}

function escapeNonAscii(json: string): string {
  return json.replace(
    /[\u0080-\uffff]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** The first line of an error message, without a trailing period. */
export function oneLineError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const first = message.split("\n")[0].trim() || "Unknown error";
  return first.replace(/\.$/, "");
}

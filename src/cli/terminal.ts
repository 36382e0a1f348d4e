/**
 * What the terminal on the other end of stdout can show, decided once per invocation from the
 * stream and the environment, the way git, gh and npm decide it:
 *   colour   only on a TTY (and not `TERM=dumb`); `NO_COLOR` (any non-empty value) turns it off,
 *            `FORCE_COLOR` (non-empty, not `0` or `false`) turns it on even into a pipe
 *   unicode  glyphs like ✓ and ▶ only when the locale says UTF-8 (`LC_ALL`, else `LC_CTYPE`, else
 *            `LANG`); an unset or `C` locale gets the ASCII fallbacks
 *   tty      a TTY gets one redrawn progress line; a pipe gets plain lines
 */
import { localeIsUtf8 } from "../render/ascii-fallback.ts";

export interface Terminal {
  tty: boolean;
  color: boolean;
  unicode: boolean;
  /** Width for a redrawn line (80 when the stream does not say). */
  columns: number;
}

export interface OutputStream {
  isTTY?: boolean;
  columns?: number;
}

export function detectTerminal(stream: OutputStream, env: NodeJS.ProcessEnv): Terminal {
  const tty = stream.isTTY === true;
  return {
    tty,
    color: colorWanted(tty, env),
    unicode: localeIsUtf8(env),
    columns: typeof stream.columns === "number" && stream.columns > 0 ? stream.columns : 80,
  };
}

function colorWanted(tty: boolean, env: NodeJS.ProcessEnv): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== "") return force !== "0" && force !== "false";
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  return tty && env.TERM !== "dumb";
}

export { localeIsUtf8 };

/** A terminal for tests and callers with no stream: not a TTY, no colour, UTF-8. */
export const PLAIN_TERMINAL: Terminal = { tty: false, color: false, unicode: true, columns: 80 };

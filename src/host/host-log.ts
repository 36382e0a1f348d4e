/**
 * The host's log: one line per event, `<iso time> <event> key=value ...`, written to stderr
 * (the detached host's stderr is `<stateDir>/host.log`). Fields are primitives the caller chose
 * to log: run ids, generations, epochs, counts, reasons. Never tokens, token hashes, payloads,
 * prompts, session ids or paths. Values are flattened to one line and bounded, and the whole log
 * stops at a byte budget so a looping failure cannot fill the disk.
 */
import type { Clock } from "../base/clock.ts";

export type LogFields = Record<string, string | number | boolean | null>;
export type HostLog = (event: string, fields?: LogFields) => void;

const MAX_VALUE_CHARS = 200;

export interface HostLogOptions {
  clock: Clock;
  /** Bytes this process may write in total; one notice is written when it is reached. */
  maxBytes: number;
  write: (line: string) => void;
}

export function createHostLog(options: HostLogOptions): HostLog {
  let written = 0;
  let exhausted = false;
  return (event, fields = {}) => {
    if (exhausted) return;
    const parts = [new Date(options.clock.now()).toISOString(), safe(event)];
    for (const [key, value] of Object.entries(fields)) parts.push(`${safe(key)}=${safe(value)}`);
    let line = parts.join(" ") + "\n";
    if (written + line.length > options.maxBytes) {
      exhausted = true;
      line = `${parts[0]} log.limit bytes=${written} further lines dropped until restart\n`;
    }
    written += line.length;
    try {
      options.write(line);
    } catch {
      // A closed stderr must not take the host down.
    }
  };
}

function safe(value: string | number | boolean | null): string {
  const text = String(value).replace(/\s+/g, "_");
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}…` : text;
}

/**
 * An error for a log field: its name and first message line, bounded, with absolute paths
 * replaced (a message may name a project or state file) so the real cause shows without
 * leaking where the user works.
 */
export function logError(error: unknown): string {
  const name = error instanceof Error ? error.name : "unknown";
  const message = error instanceof Error ? error.message : String(error);
  const line = (message.split("\n")[0] ?? "").replace(/(?:~|\.{0,2})?\/[^\s'"`,;:()]+/g, "<path>");
  const text = line ? `${name}: ${line}` : name;
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
}

/** An error's first line, without a trailing period (start failures, a refused renewal). */
export function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split("\n")[0] ?? "").trim().replace(/\.$/, "") || "Unknown error";
}

/**
 * Where the CLI writes: results to stdout (plain text for people, one JSON document with
 * `--json`), problems to stderr as one line. Errors never carry a stack trace.
 */
import { canonicalJson } from "../protocol/canonical-json.ts";

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: CliIo = {
  out: (text) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith("\n") ? text : `${text}\n`),
};

/** Stable, sorted JSON for scripts (one line). */
export function printJson(io: CliIo, value: unknown): void {
  io.out(canonicalJson(value));
}

/** The first line of an error message, without a trailing period. */
export function oneLineError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const first = message.split("\n")[0].trim() || "Unknown error";
  return first.replace(/\.$/, "");
}

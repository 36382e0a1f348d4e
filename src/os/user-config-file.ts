/**
 * Reads `config.json` from the state directory as text. The file's shape and its checks live in
 * protocol/user-config.ts; this is the one read of it, kept here so protocol does no I/O.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The text of `<stateDir>/config.json`, or undefined when there is none to read. */
export function readUserConfigText(stateDir: string): string | undefined {
  try {
    return readFileSync(join(stateDir, "config.json"), "utf8");
  } catch {
    return undefined;
  }
}

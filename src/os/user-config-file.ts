/**
 * Reads `config.json` from the state directory as text. The file's shape and its checks live in
 * protocol/user-config.ts; this is the one read of it, kept here so protocol does no I/O.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The text of `<stateDir>/config.json`; undefined when there is none; `{unreadable: code}` when
 * one is there and cannot be read (EACCES, EISDIR...). Reading an unreadable file as absent
 * would drop the user's settings silently: their `retention.days` for the default 30 days, so
 * ended runs they meant to keep would be pruned.
 */
export function readUserConfigText(
  stateDir: string,
): string | undefined | { unreadable: string } {
  try {
    return readFileSync(join(stateDir, "config.json"), "utf8");
  } catch (error) {
    const code = (error as { code?: unknown })?.code;
    // ENOTDIR: the state "directory" is a file, which the open reports; no config is in it.
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    return { unreadable: typeof code === "string" ? code : "error" };
  }
}

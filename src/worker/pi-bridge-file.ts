/**
 * The bridge extension as a file Pi can load (`-e <path>`). Its text is part of this program (the
 * bundles embed `pi-bridge.mjs` as a string), so the same file exists whether pi-workflows runs
 * from source, the npm bundle or the single executable: the worker writes it once into the
 * user-only state directory, named by its content hash, and reuses it after that.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../protocol/canonical-json.ts";

let source: string | null = null;

/** The bridge's source text. */
export function bridgeSource(): string {
  source ??= readFileSync(new URL("./pi-bridge.mjs", import.meta.url), "utf8");
  return source;
}

/** Writes `<stateDir>/pi/bridge-<hash>.mjs` (0600, directory 0700) unless it exists; its path. */
export function ensureBridgeFile(stateDir: string): string {
  const text = bridgeSource();
  const dir = join(stateDir, "pi");
  const file = join(dir, `bridge-${sha256Hex(text).slice(0, 16)}.mjs`);
  try {
    if (statSync(file).size === Buffer.byteLength(text)) return file;
  } catch {
    // not written yet
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  // Concurrent workers may race here: each writes its own temp file and renames it into place.
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, text, { mode: 0o600 });
  renameSync(temp, file);
  return file;
}

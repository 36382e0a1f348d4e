/**
 * The marker of a warm compile cache: a file in Node's compile cache directory naming the program
 * whose modules it holds (the Node version and the worker program's entry files), written once a
 * warm-up child filled the cache, so a later host start knows not to warm it again
 * (host/supervision/compile-cache-warmup.ts spawns that child).
 */
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { detectRuntime, type SelfCommand } from "./self-launch.ts";

/** Names the program whose modules the cache holds (see `warmKey`). */
const MARKER = "warmed.json";

/** Why a warm-up would be useless (a log code), or null when it is worth running. */
export function warmupSkipReason(cacheDir: string | undefined, key: string): string | null {
  // The executable carries its own V8 code cache; Deno has no Node compile cache.
  if (detectRuntime() !== "node") return "noCompileCache";
  // A run environment's own NODE_COMPILE_CACHE, or none: not the state directory's.
  if (cacheDir === undefined) return "noCompileCache";
  try {
    if (readFileSync(join(cacheDir, MARKER), "utf8") === key) return "alreadyWarm";
  } catch {
    // No marker: a new cache (or one from before warm-ups).
  }
  return null;
}

/**
 * What the marker names: the Node version (the cache's own key) and the worker program, with
 * the size and time of its entry file, so an upgraded package or Node warms again. Edited
 * sources of a checkout are caught by the cache itself (it checks each file's bytes).
 */
export function warmKey(command: SelfCommand): string {
  const files = command.args.filter((arg) => /\.(m?js|ts)$/.test(arg));
  const stamps = files.map((file) => {
    try {
      const stat = statSync(file);
      return `${file}:${stat.size}:${stat.mtimeMs}`;
    } catch {
      return file;
    }
  });
  return JSON.stringify({ node: process.version, command: command.command, files: stamps });
}

export function writeWarmMarker(cacheDir: string, key: string): void {
  try {
    mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
    writeFileSync(join(cacheDir, MARKER), key, { mode: 0o600 });
  } catch {
    // Unwritable: the next host start warms again, which costs only that child.
  }
}

/**
 * Workflow TypeScript files stripped of their types once, kept by the hash of their bytes in
 * Node's compile cache directory (which the host gives its children in the state directory), so
 * a process that loads fresh module instances of the same files again and again (a run's
 * prepared process: src/worker/fresh-instances.ts) never strips them itself.
 *
 * Why: each fresh instance is a new URL (module-hooks.ts's load-session token), so Node strips
 * its types again, and its compile cache, keyed by that URL, misses for every token no earlier
 * process loaded. The first strip in a process starts Node's TypeScript stripper, a WebAssembly
 * module that costs ~140 ms of CPU (0.1-0.5 s of the main thread at load 2-10): on a kept
 * process's first validation it was the whole of the handoff bench's verdict tail, and each later
 * load still paid a strip and Node's module-format detection (~60% of a load's CPU). The source
 * resolver, which loaded these files for the run's start (Node's stripper already running there
 * when they were new), saves each one's stripped text before its answer (`saveStripped`); the
 * load hook serves a session's load of exactly those bytes (same sha256) from it as a plain ES
 * module. Node's strip-only mode only blanks types, so positions and errors stay the same, and
 * the `sourceURL` Node appends is appended here too. Bytes never saved, or a file Node cannot
 * strip (its own load then gives its error), are stripped by Node as before, from the bytes read
 * here (one read of the file).
 */
import module from "node:module";
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync } from "node:fs";
import { readFileSync, renameSync, rmSync, statSync, utimesSync, writeSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../protocol/canonical-json.ts";
import type { WorkflowSource } from "../../protocol/worker-launch.ts";

/** The saved texts kept at most (a new one beyond removes the oldest). */
const MAX_SAVED = 256;

const TYPESCRIPT_FILE = /\.[cm]?ts$/;

/** Stripped texts read in this process, by the hash of their file's bytes. */
const known = new Map<string, string>();

/**
 * The module text of the file at `path` as Node would run it from `url` when the stripped text of
 * its bytes now was saved (`js`); else, once its bytes were read, those bytes (`bytes`: Node strips
 * them, no second read). `hash` is the bytes' (`sha256:<hex>`). Null when the file was not read
 * (no saved texts here, not TypeScript, unreadable): Node loads it.
 */
export function strippedModule(
  path: string,
  url: string,
): { hash: string; js: string } | { hash: string; bytes: Buffer } | null {
  const dir = savedDir();
  if (dir === null || !TYPESCRIPT_FILE.test(path)) return null;
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch {
    return null;
  }
  const hex = sha256Hex(bytes);
  const hash = `sha256:${hex}`;
  let js = known.get(hex);
  if (js === undefined) {
    try {
      js = checkedText(readFileSync(join(dir, `${hex}.js`), "utf8")) ?? undefined;
    } catch {
      // Never saved.
    }
    // Never saved, or a torn or altered text (a crash before the disk had it, a hand edit).
    if (js === undefined) return { hash, bytes };
    known.set(hex, js);
  }
  // What Node's loader appends to a module it stripped (the URL names the instance).
  return { hash, js: `${js}\n\n//# sourceURL=${url}` };
}

/**
 * Saves the stripped text of each TypeScript file of `source` not saved yet (a file that cannot
 * be read or stripped is left to Node's own load). Cheap where the process already stripped them
 * (Node's stripper is then running); never throws.
 */
export function saveStripped(source: WorkflowSource): void {
  const dir = savedDir();
  if (dir === null) return;
  let added = false;
  for (const entry of [source.root, ...source.mounted]) {
    if (entry.kind === "builtin" || !TYPESCRIPT_FILE.test(entry.path)) continue;
    try {
      const bytes = readFileSync(entry.path);
      const hex = sha256Hex(bytes);
      const file = join(dir, `${hex}.js`);
      if (existsSync(file)) {
        // Used again: the last to be pruned (pruneSaved goes by age).
        const now = new Date();
        utimesSync(file, now, now);
        continue;
      }
      const js = strip(bytes.toString("utf8"));
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      // Whole or absent for a process reading it meanwhile, and on the disk before its name.
      const partial = `${file}.${process.pid}.tmp`;
      const fd = openSync(partial, "w", 0o600);
      try {
        writeSync(fd, sealedText(js));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(partial, file);
      added = true;
    } catch {
      // Not strippable or not writable: loads go through Node, as before.
    }
  }
  if (added) pruneSaved(dir);
}

/** Where the texts are kept: inside Node's compile cache (its directory names Node's version). */
function savedDir(): string | null {
  if ("Deno" in globalThis) return null;
  const cacheDir = (module as { getCompileCacheDir?: () => string | undefined })
    .getCompileCacheDir?.();
  return cacheDir ? join(cacheDir, "piw-stripped") : null;
}

function strip(code: string): string {
  const stripTypes = (module as { stripTypeScriptTypes?: (code: string) => string })
    .stripTypeScriptTypes;
  if (typeof stripTypes !== "function") throw new Error("no type stripping");
  // Node flags the function as experimental on first use: noise in a worker's log.
  const original = process.emitWarning;
  process.emitWarning = () => {};
  try {
    return stripTypes(code);
  } finally {
    process.emitWarning = original;
  }
}

/** A saved text's first line: the sha256 of the rest, checked before it is served. */
const CHECK_PREFIX = "// piw-stripped sha256:";

/** The file text that keeps `js`: its check line, then `js` (checkedText reverses it). */
export function sealedText(js: string): string {
  return `${CHECK_PREFIX}${sha256Hex(js)}\n${js}`;
}

function checkedText(saved: string): string | null {
  const newline = saved.indexOf("\n");
  if (newline < 0 || !saved.startsWith(CHECK_PREFIX)) return null;
  const js = saved.slice(newline + 1);
  return saved.slice(CHECK_PREFIX.length, newline) === sha256Hex(js) ? js : null;
}

/** A temporary file older than this was left by a process killed while writing it. */
const STALE_PARTIAL_MS = 60_000;

function pruneSaved(dir: string): void {
  try {
    const all = readdirSync(dir);
    for (const name of all.filter((n) => n.endsWith(".tmp"))) {
      const path = join(dir, name);
      if (Date.now() - statSync(path).mtimeMs > STALE_PARTIAL_MS) rmSync(path, { force: true });
    }
    const names = all.filter((name) => name.endsWith(".js"));
    if (names.length <= MAX_SAVED) return;
    const byAge = names
      .map((name) => ({ name, time: statSync(join(dir, name)).mtimeMs }))
      .sort((a, b) => a.time - b.time);
    for (const { name } of byAge.slice(0, names.length - MAX_SAVED)) {
      rmSync(join(dir, name), { force: true });
    }
  } catch {
    // A crowded directory only costs disk space.
  }
}

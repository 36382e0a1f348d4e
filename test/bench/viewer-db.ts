/**
 * `npm run bench -- viewer-db <dir> [projects runs attemptsPerRun updatesPerRun largeOutputBytes]`:
 * creates the viewer benchmark's synthetic state database in `<dir>` (which must not hold one
 * yet) and prints one JSON line of row counts and the file size; never ids, paths or payloads.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchArgs, smoke } from "./_figures.ts";
import { DEFAULT_VIEWER_DB, generateViewerDb, type ViewerDbOptions } from "./_viewer-db.ts";

// Under --smoke with no directory: a small database in a temp dir, removed afterwards.
const [given, ...numbers] = smoke && benchArgs.length === 0
  ? [undefined, "3", "60", "4", "4", "2000"]
  : benchArgs;
const dir = given ?? (smoke ? mkdtempSync(join(tmpdir(), "piw-viewer-db-smoke-")) : undefined);
if (!dir) {
  console.error(
    "Usage: npm run bench -- viewer-db <dir> [projects runs attemptsPerRun updatesPerRun largeOutputBytes]",
  );
  process.exit(2);
}
if (existsSync(join(dir, "state.sqlite"))) {
  console.error("The directory already holds a state database: choose an empty one");
  process.exit(2);
}
const keys = Object.keys(DEFAULT_VIEWER_DB) as (keyof ViewerDbOptions)[];
const opts = { ...DEFAULT_VIEWER_DB };
numbers.forEach((n, i) => {
  const value = Number(n);
  if (!Number.isSafeInteger(value) || value < 1 || i >= keys.length) {
    console.error(
      `Invalid number ${JSON.stringify(n)}: expected positive integers for ${keys.join(" ")}`,
    );
    process.exit(2);
  }
  opts[keys[i]] = value;
});
const started = performance.now();
const counts = generateViewerDb(dir, opts);
console.log(JSON.stringify({
  bench: "viewer-db",
  ...counts,
  megabytes: Math.round(counts.bytes / 1e5) / 10,
  seconds: Math.round((performance.now() - started) / 100) / 10,
}));
if (given === undefined) rmSync(dir, { recursive: true, force: true });

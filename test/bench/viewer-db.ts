/**
 * `npm run bench -- viewer-db <dir> [projects runs attemptsPerRun updatesPerRun largeOutputBytes]`:
 * creates the viewer benchmark's synthetic state database in `<dir>` (which must not hold one
 * yet) and prints one JSON line of row counts and the file size; never ids, paths or payloads.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_VIEWER_DB, generateViewerDb, type ViewerDbOptions } from "./_viewer-db.ts";

const [dir, ...numbers] = process.argv.slice(2);
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

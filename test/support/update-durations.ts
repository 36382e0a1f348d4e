/**
 * `npm run test:durations`: rewrites test/support/file-durations.json (the order vitest starts
 * files in, file-order.ts) from the durations vitest cached for the files of the last runs in this
 * checkout (node_modules/.vite/vitest/<hash>/results.json). Files the cache does not hold keep
 * their figure; files that no longer exist are dropped. Run it after a whole `npm run test:unit`
 * on a quiet machine: figures from a loaded machine or a partial run order the files less well
 * (never wrongly: the order is all it changes). Prints what it changed.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DURATIONS_FILE, readDurations } from "./file-order.ts";

const root = resolve(fileURLToPath(new URL("../..", import.meta.url)));
const cacheDir = join(root, "node_modules/.vite/vitest");

/** vitest's cache: `[["project:path", { duration: ms, failed }], …]`; "" is a run without projects. */
export function cachedSeconds(text: string): Record<string, number> {
  const parsed = JSON.parse(text) as { results?: Array<[string, { duration?: number }]> };
  const seconds: Record<string, number> = {};
  for (const [key, result] of parsed.results ?? []) {
    if (typeof result?.duration !== "number" || !(result.duration > 0)) continue;
    const name = key.startsWith(":") ? `default${key}` : key;
    seconds[name] = Math.round(result.duration / 100) / 10;
  }
  return seconds;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const caches = existsSync(cacheDir)
    ? readdirSync(cacheDir).map((d) => join(cacheDir, d, "results.json")).filter(existsSync)
    : [];
  if (caches.length === 0) {
    console.error(`No vitest results in ${cacheDir}: run npm run test:unit first`);
    process.exit(1);
  }
  const old = readDurations();
  const next: Record<string, number> = { ...old };
  for (const file of caches) Object.assign(next, cachedSeconds(readFileSync(file, "utf8")));
  const kept = Object.keys(next).filter((key) => existsSync(join(root, key.replace(/^[^:]*:/, ""))))
    .sort();
  const written = Object.fromEntries(kept.map((key) => [key, next[key]]));
  writeFileSync(DURATIONS_FILE, `${JSON.stringify(written, null, 2)}\n`);
  const changed = kept.filter((key) => old[key] !== written[key]).length;
  const dropped = Object.keys(old).filter((key) => !(key in written)).length;
  console.log(
    `${
      fileURLToPath(DURATIONS_FILE)
    }: ${kept.length} files, ${changed} changed, ${dropped} dropped`,
  );
}

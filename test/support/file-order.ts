/**
 * The order vitest starts test files in: the longest first, by the durations a whole run measured
 * (test/support/file-durations.json, `project:path` -> seconds), so that no long file starts
 * late and ends the run alone. Without it a fresh clone (no vitest cache) starts the larger files
 * first, and testing/examples.test.ts (a small file, the longest single test) started 212th of
 * 222: the ps pass's files after it still kept the other worker busy (with CI-H's durations the two
 * workers end ~4 s apart in that order, under 1 s in this one), but a slower file in its place
 * would not have been covered. A file the list does not know (a new one) goes first: its length is
 * unknown. The ps pass's files are interleaved with the rest (vitest's own order runs one project
 * after the other).
 *
 * `npm run test:durations` rewrites the list from the durations vitest cached in the last runs
 * (node_modules/.vite/vitest/…/results.json): run it after a whole `npm run test:unit` on a quiet
 * machine, or paste a CI run's figures. Only the order depends on it, never what runs.
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";

export const DURATIONS_FILE = new URL("./file-durations.json", import.meta.url);

/** `default:test/a.test.ts`: the project's name ("default" for a run without projects). */
export function fileKey(project: string, root: string, moduleId: string): string {
  return `${project || "default"}:${relative(root, moduleId)}`;
}

interface Ordered<T> {
  item: T;
  key: string;
  /** Bytes of the file: the tiebreak among files of unknown duration (vitest's own order). */
  size: number;
}

/**
 * Unknown files first (largest first among them), then the known ones longest first; equal
 * durations keep a stable order by key.
 */
export function orderByDuration<T>(
  files: ReadonlyArray<Ordered<T>>,
  seconds: Readonly<Record<string, number>>,
): T[] {
  const duration = (key: string) => Object.hasOwn(seconds, key) ? seconds[key] : undefined;
  return [...files].sort((a, b) => {
    const da = duration(a.key);
    const db = duration(b.key);
    if (da === undefined || db === undefined) {
      if (da !== db) return da === undefined ? -1 : 1;
      return b.size - a.size || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
    }
    return db - da || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  }).map((f) => f.item);
}

export function readDurations(file: URL = DURATIONS_FILE): Record<string, number> {
  return JSON.parse(readFileSync(file, "utf8"));
}

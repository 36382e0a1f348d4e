/**
 * Reads the pages the vacuum's next step will move into the operating system's cache, outside the
 * write lock (vacuum-phase.ts). `incremental_vacuum` returns the file's last pages: a free one is
 * cut off, one in use is copied into a free page lower down after its pointer-map entry is read.
 * Those pages lie at the file's tail, which nothing else reads: on a machine whose cache dropped
 * them each comes from the disk one at a time inside the step, under the lock (two steps of a quiet
 * 100,000-run prune held it 36.5 and 40.4 ms, 1.6-1.7 ms of it on a CPU). Read here, one call for
 * the whole range, the step finds them cached. The content read is not used: the current version of
 * a page may be in the WAL, which SQLite reads itself (written lately, it is cached).
 *
 * Through a descriptor held open for the process's life (held-files.ts): closing one would drop
 * SQLite's locks on the file.
 */
import { readSync } from "node:fs";
import type { StateStore } from "../store.ts";
import { heldDescriptor } from "./held-files.ts";
import { pageSize, pragmaNumber } from "./database-pages.ts";

/** SQLite's lock-byte page (never used) in a file past 1 GiB, at its default page numbering. */
const PENDING_BYTE = 0x40000000;

export interface TailReader {
  /** Reads the last `pages` pages of the database and the pointer-map pages over them. */
  read(pages: number): void;
}

export function createTailReader(store: StateStore, maxPages: number): TailReader {
  let buffer: Buffer | null = null;
  return {
    read(pages) {
      const size = pageSize(store);
      const count = pragmaNumber(store, "page_count");
      const n = Math.min(pages, maxPages, count);
      if (n <= 0 || size <= 0) return;
      buffer ??= Buffer.allocUnsafe(maxPages * size);
      try {
        const fd = heldDescriptor(store.path);
        if (fd === null) return;
        const first = count - n + 1;
        readSync(fd, buffer, 0, n * size, (first - 1) * size);
        // The pointer-map pages that hold these pages' entries, below the range.
        for (const map of new Set([pointerMapPage(first, size), pointerMapPage(count, size)])) {
          if (map < first) readSync(fd, buffer, 0, size, (map - 1) * size);
        }
      } catch {
        // A read ahead is a hint: the step reads what it needs either way.
      }
    },
  };
}

/**
 * The pointer-map page holding `page`'s entry (SQLite's `ptrmapPageno`, file format 1.5: one
 * after page 1, then one every `size / 5 + 1` pages; no reserved bytes in the state database).
 */
export function pointerMapPage(page: number, size: number): number {
  const span = Math.floor(size / 5) + 1;
  const map = Math.floor((page - 2) / span) * span + 2;
  return map === Math.floor(PENDING_BYTE / size) + 1 ? map + 1 : map;
}

/** The state file's page counts and size, as a retention pass reports them. */
import { statSync } from "node:fs";
import { queryOneArgs } from "../statements.ts";
import type { StateStore } from "../store.ts";

/** The value of a numeric pragma (`synchronous`, `freelist_count`, ...). */
export function pragmaNumber(store: StateStore, name: string): number {
  const row = queryOneArgs<Record<string, number>>(store, `PRAGMA ${name}`);
  return row ? Number(Object.values(row)[0]) : 0;
}

export function freePages(store: StateStore): number {
  return pragmaNumber(store, "freelist_count");
}

export function pageSize(store: StateStore): number {
  return pragmaNumber(store, "page_size");
}

export function usedPages(store: StateStore): number {
  return pragmaNumber(store, "page_count") - freePages(store);
}

export function fileBytes(store: StateStore): number {
  try {
    return statSync(store.path).size;
  } catch {
    return 0;
  }
}

/**
 * A new state database comes into being whole: it is built and initialized under a temporary
 * name in the state directory, then linked into place as `state.sqlite`. So a host killed while
 * creating it never leaves a `state.sqlite` that is empty or half made, and an empty
 * `state.sqlite` is never ours: the opening refuses it (docs/state.md) instead of taking it as
 * a new database.
 */
import { closeSync, fsyncSync, linkSync, openSync, readdirSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { DatabaseSync } from "node:sqlite";

const SUFFIX = ".new-";

/**
 * Creates `path`: `build` gets the open temporary database (mode 0600) and makes it complete;
 * the file is closed (its WAL checkpointed into it) and linked into place. When another
 * process created `path` meanwhile, theirs is kept. Leftovers of a creation killed midway
 * (their process gone) are removed first.
 */
export function createStateFile(
  path: string,
  timeout: number,
  build: (db: DatabaseSync, temp: string) => void,
): void {
  removeLeftovers(path);
  const temp = `${path}${SUFFIX}${process.pid}`;
  try {
    closeSync(openSync(temp, "w", 0o600));
    const db = new DatabaseSync(temp, { timeout });
    try {
      build(db, temp);
    } finally {
      if (db.isOpen) db.close();
    }
    try {
      linkSync(temp, path);
    } catch (error) {
      if ((error as { code?: unknown }).code !== "EEXIST") throw error;
    }
    syncDirectory(dirname(path));
  } finally {
    for (const file of [temp, `${temp}-wal`, `${temp}-shm`]) rmSync(file, { force: true });
  }
}

function removeLeftovers(path: string): void {
  const prefix = `${basename(path)}${SUFFIX}`;
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number.parseInt(name.slice(prefix.length), 10);
    if (Number.isInteger(pid) && pid !== process.pid && alive(pid)) continue;
    rmSync(join(dirname(path), name), { force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: unknown }).code === "EPERM";
  }
}

/** The link is a directory entry: make it as durable as the file's content. */
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // Not every platform can fsync a directory; the file's content is already synced.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

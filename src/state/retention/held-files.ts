/**
 * Read-only descriptors of the state database's files, each opened once and kept: on Linux and
 * macOS closing any descriptor of a file drops every fcntl lock the process holds on that file,
 * and SQLite's locks live on them (on `-shm` among others the one that tells another connection
 * the WAL-index is in use, taken once at open, never again; a22a2f4 fixed the SIGBUS a close
 * caused). A descriptor is closed only once its path names another file or none (its database
 * was removed, or SQLite removed `-shm` when its last connection closed), when no connection of
 * this process can hold a lock on the file it has open.
 */
import { closeSync, fstatSync, openSync, statSync } from "node:fs";

interface Held {
  fd: number;
  dev: number;
  ino: number;
}

/** Open descriptors by path (see above: never closed while the path names their file). */
const held = new Map<string, Held>();

/** The open descriptor of `path`'s current file, opened once; null when there is none. */
export function heldDescriptor(path: string): number | null {
  const known = held.get(path);
  if (known !== undefined && namesFile(path, known)) return known.fd;
  // Files gone or replaced since (a test's temporary state directories): their descriptors go.
  for (const [other, file] of held) {
    if (!namesFile(other, file)) {
      held.delete(other);
      closeSync(file.fd);
    }
  }
  if (statOf(path) === undefined) return null;
  const fd = openSync(path, "r");
  const { dev, ino } = fstatSync(fd);
  held.set(path, { fd, dev, ino });
  return fd;
}

/**
 * Whether `path` still names the file `file` has open. Only a path that names no file (or
 * another) lets the descriptor go: a stat that fails otherwise (EACCES while a directory's mode
 * changes, EIO, ELOOP while a link is re-pointed) says nothing, and closing the open database's
 * descriptor on it would drop the process's locks.
 */
function namesFile(path: string, file: Held): boolean {
  let now: { dev: number; ino: number };
  try {
    now = statSync(path);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return code !== "ENOENT" && code !== "ENOTDIR";
  }
  return now.dev === file.dev && now.ino === file.ino;
}

function statOf(path: string): { dev: number; ino: number } | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

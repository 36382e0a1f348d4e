/**
 * How many frames the WAL holds, read from the WAL-index header at the start of `<file>-shm`
 * (SQLite's documented WAL-index format, unchanged since 3.7.0: https://sqlite.org/walformat.html):
 * `mxFrame`, what SQLite counts against `wal_autocheckpoint`, and the salt, which changes each
 * time the WAL starts over. `node:sqlite` has no other way to it (no `sqlite3_wal_hook`, and
 * `wal_checkpoint(NOOP)` is a real passive checkpoint before SQLite 3.51). Reading it takes no
 * lock and changes nothing in the file; the pass reads it between its transactions, when the host's
 * connection, the only writer, is not writing. Null when the file is missing or the header does
 * not look whole (two copies that differ, not initialised, another version): the pass then
 * estimates from its checkpoints.
 *
 * The descriptor it reads through stays open (held-files.ts): closing any descriptor of a file
 * drops every fcntl lock the process holds on it, SQLite's WAL locks on `-shm` among them.
 */
import { readSync } from "node:fs";
import { endianness } from "node:os";
import { sqliteFilePath } from "../state-file-path.ts";
import { heldDescriptor } from "./held-files.ts";

/** The header's version field (`iVersion`). */
const WAL_INDEX_VERSION = 3007000;
/** Two copies of the 48-byte header. */
const HEADER_BYTES = 96;

export interface WalPosition {
  /** Valid frames in the WAL. */
  frames: number;
  /** The WAL's first salt: a new one each time the WAL starts over. */
  salt: number;
}

const header = Buffer.alloc(HEADER_BYTES);
const littleEndian = endianness() === "LE";

export function readWalPosition(databasePath: string): WalPosition | null {
  try {
    // Beside the file SQLite opened: a symlinked state file's target.
    const fd = heldDescriptor(`${sqliteFilePath(databasePath)}-shm`);
    if (fd === null || readSync(fd, header, 0, HEADER_BYTES, 0) < HEADER_BYTES) return null;
  } catch {
    return null;
  }
  if (!header.subarray(0, 48).equals(header.subarray(48, 96))) return null;
  // Native byte order (the format's).
  const u32 = (offset: number) =>
    littleEndian ? header.readUInt32LE(offset) : header.readUInt32BE(offset);
  if (u32(0) !== WAL_INDEX_VERSION || header[12] !== 1) return null;
  return { frames: u32(16), salt: u32(32) };
}

/** Frames written from `from` to `to`: all of `to`'s when the WAL started over between them. */
export function framesBetween(from: WalPosition, to: WalPosition): number {
  return to.salt === from.salt && to.frames >= from.frames ? to.frames - from.frames : to.frames;
}

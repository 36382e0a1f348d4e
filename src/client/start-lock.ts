/**
 * At most one host start at a time per state directory. A client that has to start the host
 * first takes `<stateDir>/host-start.lock`: the file is created exclusively and names its holder
 * by pid and process start identity. Every other client that finds it held by a live process
 * starts nothing and waits for the socket instead; a lock whose holder is gone (killed while
 * starting) is taken over. The host claim in the database stays the real guarantee that only one
 * host runs; the lock keeps a crowd of clients from spawning a crowd of hosts. Taking it also
 * sweeps the draft and set-aside files of clients that died (or ran out of disk) mid-way.
 */
import {
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import {
  formatStartIdentity,
  isSameProcessAliveNow,
  parseStartIdentity,
  readProcessIdentityNow,
} from "../os/process-identity.ts";

export const START_LOCK_FILE_NAME = "host-start.lock";
/** A draft or set-aside lock file and the pid of the client that wrote it. */
const LEFTOVER = /^host-start\.lock\.(\d+)\.(new|stale)$/;

export interface StartLock {
  /** Removes the lock if it is still this process's. */
  release(): void;
}

/**
 * Takes the start lock, or returns null while another live process holds it. Creates the state
 * directory (0700) first; throws when it cannot be created or written.
 */
export function tryStartLock(stateDir: string): StartLock | null {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const path = join(stateDir, START_LOCK_FILE_NAME);
  const own = ownIdentity();
  removeLeftovers(stateDir);
  for (let attempt = 0; attempt < 3; attempt++) {
    if (createWithContent(path, own)) return { release: () => releaseIfOwn(path, own) };
    const holder = readText(path);
    if (holder === null) continue; // released meanwhile: try again
    if (holderAlive(holder)) return null;
    if (!takeStale(path, holder)) return null;
  }
  return null;
}

/**
 * Creates `path` holding `text`, or returns false when it exists. The file appears with its
 * content (written aside, then hard-linked into place): an exclusive create followed by a write
 * would let a client that reads in between see an empty lock, take it for a dead holder's and
 * take it over, so two clients would both start a host.
 */
function createWithContent(path: string, text: string): boolean {
  const draft = `${path}.${process.pid}.new`;
  try {
    // Inside the try: a write that fails half way (a full disk) leaves no draft behind.
    writeFileSync(draft, text, { mode: 0o600 });
    linkSync(draft, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return false;
  } finally {
    rmSync(draft, { force: true });
  }
}

/**
 * Removes the drafts (`.new`) and set-aside files (`.stale`) of clients that died between writing
 * and removing them (killed, or out of disk): each names its writer's pid, and only a writer that
 * no longer runs is a leftover.
 */
function removeLeftovers(stateDir: string): void {
  for (const name of readdirSync(stateDir)) {
    const pid = Number(LEFTOVER.exec(name)?.[1]);
    if (!pid || pid === process.pid || pidExists(pid)) continue;
    rmSync(join(stateDir, name), { force: true });
  }
}

/** This process as the lock names it: `pid:starttime`, or `pid:` where /proc is unreadable. */
function ownIdentity(): string {
  const identity = readProcessIdentityNow(process.pid);
  return identity ? formatStartIdentity(identity) : `${process.pid}:`;
}

function holderAlive(holder: string): boolean {
  const identity = parseStartIdentity(holder);
  if (identity !== null) return isSameProcessAliveNow(identity);
  // No start identity (no /proc): a pid that still exists counts as the holder.
  const pid = Number(holder.split(":")[0]);
  return Number.isInteger(pid) && pid > 0 && pidExists(pid);
}

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Moves a stale lock aside and removes it when it is still the stale one. If another client
 * replaced it in between (the aside file names a live holder), it is put back and the lock counts
 * as held.
 */
function takeStale(path: string, stale: string): boolean {
  const aside = `${path}.${process.pid}.stale`;
  try {
    renameSync(path, aside);
  } catch {
    return true; // gone already: try to create it again
  }
  const moved = readText(aside);
  if (moved === stale || moved === null || !holderAlive(moved)) {
    rmSync(aside, { force: true });
    return true;
  }
  try {
    linkSync(aside, path);
  } catch {
    // Someone else holds a fresh lock now; theirs stays.
  }
  rmSync(aside, { force: true });
  return false;
}

function releaseIfOwn(path: string, own: string): void {
  if (readText(path) === own) rmSync(path, { force: true });
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return null;
  }
}

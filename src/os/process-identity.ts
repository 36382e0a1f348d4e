/**
 * Process identity and process-group signalling, over the process backend (process-backend.ts).
 *
 * A PID alone is not an identity: after a process dies the kernel may hand the same number to an
 * unrelated process. We pair the PID with its start time (`/proc` start ticks, or the `ps` start
 * second), which a later process with the same PID does not share. Every signal the host sends
 * goes through `signalGroup`, which checks the identity first and refuses on any mismatch.
 *
 * The `ps` start time has one-second resolution, so a PID reused within the second its first
 * owner started would share it. Two rules keep that from letting a reused PID be signalled
 * (docs/compile.md, "Process identity without /proc"):
 * - a process this process started itself (`identifyChild`) is signalled on the word of its own
 *   child handle, checked in the same synchronous step as `kill`: until Node reports the exit
 *   the child is unreaped, so its PID (and so its group) cannot belong to anyone else. After the
 *   exit its identity is remembered as reaped until its start second is long past, so a process
 *   that took the PID within that second is never taken for it;
 * - any other process must show, in a table read after the decision began, the same PID, the
 *   same start second and the same process group (it leads its own, or it is not signalled).
 */
import type { ChildProcess } from "node:child_process";
import { processBackend } from "./process-backend.ts";
import {
  descendantsIn,
  groupHasLiveMembersIn,
  isDeadState,
  liveIdentity,
  type ProcessIdentity,
  type ProcessStat,
  type ProcessTable,
  ProcessTableUnavailable,
  sameProcessAlive,
  type TreeMember,
} from "./process-table.ts";

export type { ProcessIdentity, ProcessStat, ProcessTable, TreeMember };
export { ProcessTableUnavailable };

/** A view of the process table (`fresh`: read after this call; see ps-table.ts). */
export function processTable(options: { fresh?: boolean } = {}): Promise<ProcessTable> {
  return processBackend().table(options);
}

/** The process with this PID, zombies included; null when gone (or the table is unreadable). */
export async function readProcessStat(pid: number): Promise<ProcessStat | null> {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  const table = await tableOrNull({ fresh: true });
  return table?.stat(pid) ?? null;
}

/** The start identity of a live process, or null when it is gone or a zombie. */
export async function readProcessIdentity(pid: number): Promise<ProcessIdentity | null> {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  const table = await tableOrNull({ fresh: true });
  return table === null ? null : liveIdentity(table, pid);
}

/**
 * True when exactly this process (PID and start time) still runs. An unreadable table throws
 * `ProcessTableUnavailable`: no caller may mistake "cannot tell" for "gone".
 */
export async function isSameProcessAlive(identity: ProcessIdentity): Promise<boolean> {
  const own = ownChildState(identity);
  if (own !== null) return own === "running";
  return sameProcessAlive(await processTable({ fresh: true }), identity);
}

/**
 * `readProcessIdentity` answered before returning, for short-lived clients (the CLI, the
 * extension's start lock) that have no event loop worth sparing: `ps -p PID` under `ps`.
 */
export function readProcessIdentityNow(pid: number): ProcessIdentity | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  const table = processBackend().tableOfNow(pid);
  return table === null ? null : liveIdentity(table, pid);
}

/** `readProcessStat` answered before returning (see `readProcessIdentityNow`). */
export function readProcessStatNow(pid: number): ProcessStat | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  return processBackend().tableOfNow(pid)?.stat(pid) ?? null;
}

/** `isSameProcessAlive` answered before returning (see `readProcessIdentityNow`). */
export function isSameProcessAliveNow(identity: ProcessIdentity): boolean {
  return readProcessIdentityNow(identity.pid)?.startTime === identity.startTime;
}

/** Serialized form stored in `run_workers.process identity` columns: `pid:starttime`. */
export function formatStartIdentity(identity: ProcessIdentity): string {
  return `${identity.pid}:${identity.startTime}`;
}

export function parseStartIdentity(text: string | null | undefined): ProcessIdentity | null {
  if (!text) return null;
  const match = /^(\d+):(\d+)$/.exec(text);
  if (!match) return null;
  return { pid: Number(match[1]), startTime: match[2] };
}

// --- children this process started ---------------------------------------------------------

interface OwnChild {
  child: ChildProcess;
  startTime: string;
  /** When Node reported the exit (the PID was freed then), or null while unreaped. */
  reapedAt: number | null;
}

/** How long a reaped child is remembered: past its start second, with room for clock steps. */
const REAPED_MEMORY_MS = 5_000;
const ownChildren = new Map<number, OwnChild>();

/**
 * The identity of `child`, a process this process just spawned `detached` (it leads its own
 * group for good), read while the child is provably unreaped; null when it is already gone.
 * The child is remembered so `signalGroup` can rely on its handle (see the file comment).
 */
export async function identifyChild(child: ChildProcess): Promise<ProcessIdentity | null> {
  if (child.pid === undefined) return null;
  return identifyIn(child, await tableOrNull({ fresh: true }));
}

/**
 * `identifyChild` for a caller that must name the child before it returns (the host's worker
 * spawn, whose callers record the identity in the same step). Under `/proc` this reads nothing
 * but the child's own stat file; under `ps` it runs one bounded `ps -p` for the child alone
 * (see ps-table.ts: `readPsRowNow`), the one place the host waits on `ps`.
 */
export function identifyChildNow(child: ChildProcess): ProcessIdentity | null {
  if (child.pid === undefined) return null;
  return identifyIn(child, processBackend().tableOfNow(child.pid));
}

function identifyIn(child: ChildProcess, table: ProcessTable | null): ProcessIdentity | null {
  const pid = child.pid!;
  // Checked after the read: an exit not yet reported means the child was unreaped while the
  // table was read, so the row with its PID is its own.
  if (table === null || exited(child)) return null;
  const stat = table.stat(pid);
  if (stat === null || isDeadState(stat.state) || stat.pgrp !== pid) return null;
  forgetStaleChildren();
  const own: OwnChild = { child, startTime: stat.startTime, reapedAt: null };
  ownChildren.set(pid, own);
  child.once("exit", () => {
    own.reapedAt = Date.now();
  });
  return { pid, startTime: stat.startTime };
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** "running" (unreaped), "reaped", or null when `identity` is not a child this process tracks. */
function ownChildState(identity: ProcessIdentity): "running" | "reaped" | null {
  const own = ownChildren.get(identity.pid);
  if (own === undefined || own.startTime !== identity.startTime) return null;
  return own.reapedAt === null && !exited(own.child) ? "running" : "reaped";
}

function forgetStaleChildren(): void {
  const now = Date.now();
  for (const [pid, own] of ownChildren) {
    if (own.reapedAt !== null && now - own.reapedAt > REAPED_MEMORY_MS) ownChildren.delete(pid);
  }
}

// --- signalling ----------------------------------------------------------------------------

/**
 * Sends `signal` to the process group led by `identity` when, and only when, that exact process
 * still exists (a zombie leader included: its group may hold live descendants) and still leads
 * its group. Returns whether a signal was sent. A reused PID is never signalled.
 */
export async function signalGroup(
  identity: ProcessIdentity,
  signal: NodeJS.Signals,
): Promise<boolean> {
  // Our own unreaped child: no table needed, and nothing can come between check and kill.
  if (ownChildState(identity) === "running") return killQuietly(-identity.pid, signal);
  if (groupIsEmpty(identity.pid)) return false;
  const table = await tableOrNull({ fresh: true });
  return table !== null && signalGroupIn(table, identity, signal);
}

/**
 * `signalGroup` against a table the caller read after its decision began (one read for a whole
 * tree). The checks and the `kill` run in one synchronous step.
 */
export function signalGroupIn(
  table: ProcessTable,
  identity: ProcessIdentity,
  signal: NodeJS.Signals,
): boolean {
  const own = ownChildState(identity);
  if (own === "running") return killQuietly(-identity.pid, signal);
  const stat = table.stat(identity.pid);
  if (stat === null) return signalLeaderlessGroup(table, identity.pid, signal);
  // A reaped child of ours: whoever holds its PID now is someone else.
  if (own === "reaped" || stat.startTime !== identity.startTime) return false;
  if (stat.pgrp !== identity.pid && !isDeadState(stat.state)) return false;
  return killQuietly(-identity.pid, signal);
}

/**
 * The leader is gone entirely. No kernel hands out a PID that still names a live process group,
 * so while no process has this PID but some process still has it as its group, that group is
 * the one our leader led: its surviving descendants are signalled. With none nothing is sent.
 */
function signalLeaderlessGroup(table: ProcessTable, pgid: number, signal: NodeJS.Signals): boolean {
  if (!groupHasLiveMembersIn(table, pgid)) return false;
  return killQuietly(-pgid, signal);
}

/** The live descendants of `pid`, read after this call (see `descendantsIn`). */
export async function descendantsOf(pid: number): Promise<TreeMember[]> {
  const table = await tableOrNull({ fresh: true });
  return table === null ? [] : descendantsIn(table, pid);
}

/** True while any live (non-zombie) process is still in the group `pgid`. */
export async function groupHasLiveMembers(pgid: number): Promise<boolean> {
  // One signal-0 probe first: ESRCH means the group has no member at all (the usual answer once
  // a worker exited), so no table is read; the table still tells live members from zombies
  // when the probe finds some. An unreadable table counts as "members left" (stop waits on).
  if (groupIsEmpty(pgid)) return false;
  const table = await tableOrNull({ fresh: true });
  return table === null || groupHasLiveMembersIn(table, pgid);
}

/** The group has no member at all (the signal-0 probe answers ESRCH). */
export function groupIsEmpty(pgid: number): boolean {
  if (!Number.isInteger(pgid) || pgid <= 1) return false;
  try {
    process.kill(-pgid, 0);
    return false;
  } catch (error) {
    return (error as { code?: unknown }).code === "ESRCH";
  }
}

/** Own-child state for stop-group.ts: whether `identity` is a child still unreaped. */
export function isOwnRunningChild(identity: ProcessIdentity): boolean {
  return ownChildState(identity) === "running";
}

/** Whether `identity` is a child of ours Node reported exited (its PID was freed then). */
export function isOwnReapedChild(identity: ProcessIdentity): boolean {
  return ownChildState(identity) === "reaped";
}

async function tableOrNull(options: { fresh?: boolean }): Promise<ProcessTable | null> {
  try {
    return await processTable(options);
  } catch (error) {
    if (error instanceof ProcessTableUnavailable) return null;
    throw error;
  }
}

function killQuietly(target: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(target, signal);
    return true;
  } catch {
    return false;
  }
}

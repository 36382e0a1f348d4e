/**
 * Process identity and process-group signalling: the one place that knows Linux `/proc`.
 *
 * A PID alone is not an identity: after a process dies the kernel may hand the same number to an
 * unrelated process. We pair the PID with its start time (`/proc/PID/stat` field 22, clock ticks
 * since boot), which no later process with the same PID can share. Every signal the host sends
 * goes through `signalGroup`, which re-reads the identity first and refuses on any mismatch.
 */
import { readdirSync, readFileSync } from "node:fs";

/**
 * Why this platform cannot host runs, or null on Linux. Without `/proc` the host could tell no
 * live worker from a recycled PID (every run would crash-loop) and could stop no worker group,
 * so it refuses to start instead.
 */
export function processIdentityUnsupported(
  platform: string = process.platform,
  hasProc: boolean = readProcessStat(process.pid) !== null,
): string | null {
  if (platform === "linux" && hasProc) return null;
  const where = platform === "linux" ? "this Linux has no readable /proc" : `this is ${platform}`;
  return `The pi-workflows host runs on Linux only: it identifies and stops worker processes ` +
    `through /proc, and ${where}`;
}

export interface ProcessIdentity {
  pid: number;
  /** `/proc/PID/stat` field 22 as a decimal string (fits no JS number guarantee, keep it text). */
  startTime: string;
}

export interface ProcessStat extends ProcessIdentity {
  /** Field 3: R, S, D, Z, T... */
  state: string;
  /** Field 4. */
  ppid: number;
  /** Field 5: the process group. */
  pgrp: number;
}

/** Reads `/proc/PID/stat`; null when the process does not exist (or /proc is unavailable). */
export function readProcessStat(pid: number): ProcessStat | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name (field 2) may hold spaces and parentheses: split after the LAST ")".
  const close = text.lastIndexOf(")");
  if (close < 0) return null;
  const fields = text.slice(close + 2).trim().split(" ");
  if (fields.length < 20) return null;
  return {
    pid,
    state: fields[0],
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    startTime: fields[19],
  };
}

/** The start identity of a live process, or null when it is gone or a zombie. */
export function readProcessIdentity(pid: number): ProcessIdentity | null {
  const stat = readProcessStat(pid);
  if (stat === null || isDeadState(stat.state)) return null;
  return { pid: stat.pid, startTime: stat.startTime };
}

/** Zombies (`Z`) and dead (`X`) entries count as gone: they can run no more code. */
function isDeadState(state: string): boolean {
  return state === "Z" || state === "X";
}

/** True when exactly this process (PID and start time) still runs. */
export function isSameProcessAlive(identity: ProcessIdentity): boolean {
  const now = readProcessIdentity(identity.pid);
  return now !== null && now.startTime === identity.startTime;
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

/**
 * Sends `signal` to the process group led by `identity` when, and only when, that exact process
 * still exists (a zombie leader included: its group may hold live descendants) and still leads
 * its group. Returns whether a signal was sent. A reused PID is never signalled.
 */
export function signalGroup(identity: ProcessIdentity, signal: NodeJS.Signals): boolean {
  const stat = readProcessStat(identity.pid);
  if (stat === null) return signalLeaderlessGroup(identity.pid, signal);
  if (stat.startTime !== identity.startTime) return false;
  if (stat.pgrp !== identity.pid && !isDeadState(stat.state)) return false;
  return killQuietly(-identity.pid, signal);
}

/**
 * The leader is gone entirely. Linux never hands out a PID that still names a live process group,
 * so while no process has this PID but some process still has it as its group, that group is the
 * one our worker led: its surviving descendants are signalled. With no such process nothing is sent.
 */
function signalLeaderlessGroup(pgid: number, signal: NodeJS.Signals): boolean {
  if (!groupHasLiveMembers(pgid)) return false;
  if (readProcessStat(pgid) !== null) return false;
  return killQuietly(-pgid, signal);
}

/**
 * The live descendants of `pid` (children, their children, ...) with their start identities,
 * found through the parent links in `/proc`. A descendant that already left the tree (its parent
 * died and it was re-parented) is not found: callers collect while the tree is intact.
 */
export function descendantsOf(pid: number): ProcessIdentity[] {
  const children = new Map<number, ProcessStat[]>();
  for (const stat of listProcessStats()) {
    if (isDeadState(stat.state)) continue;
    const siblings = children.get(stat.ppid);
    if (siblings) siblings.push(stat);
    else children.set(stat.ppid, [stat]);
  }
  const found: ProcessIdentity[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push({ pid: child.pid, startTime: child.startTime });
      queue.push(child.pid);
    }
  }
  return found;
}

function listProcessStats(): ProcessStat[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const stats: ProcessStat[] = [];
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readProcessStat(Number(name));
    if (stat !== null) stats.push(stat);
  }
  return stats;
}

/** True while any live (non-zombie) process is still in the group `pgid`. */
export function groupHasLiveMembers(pgid: number): boolean {
  // One signal-0 probe first: ESRCH means the group has no member at all (the usual answer once
  // a worker exited), so the scan of every process on the machine is skipped; it still tells
  // live members from zombies when the probe finds some.
  if (groupIsEmpty(pgid)) return false;
  return listProcessStats().some((stat) => stat.pgrp === pgid && !isDeadState(stat.state));
}

function groupIsEmpty(pgid: number): boolean {
  if (!Number.isInteger(pgid) || pgid <= 1) return false;
  try {
    process.kill(-pgid, 0);
    return false;
  } catch (error) {
    return (error as { code?: unknown }).code === "ESRCH";
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

/**
 * A view of the machine's processes, the one shape both process backends answer in: the Linux
 * `/proc` reader (proc-table.ts) and the portable `ps` reader (ps-table.ts). Queries on a view
 * are synchronous; taking a view is what may wait (running `ps`), so callers take one view per
 * decision and ask it everything that decision needs.
 */

export interface ProcessIdentity {
  pid: number;
  /**
   * The start time that, with the PID, names one process for good: `/proc/PID/stat` field 22
   * (clock ticks since boot) under the `/proc` backend, the start second (Unix time, from `ps`
   * `lstart` read in UTC) under the `ps` backend. Decimal text: field 22 fits no JS number.
   */
  startTime: string;
}

export interface ProcessStat extends ProcessIdentity {
  /** The state letter: R, S, D, Z, T... (`ps` `stat`'s first letter, `/proc` field 3). */
  state: string;
  ppid: number;
  /** The process group. */
  pgrp: number;
}

export interface ProcessTable {
  /** The process with this PID, zombies included; null when there is none. */
  stat(pid: number): ProcessStat | null;
  /** Every process the view holds. */
  all(): Iterable<ProcessStat>;
  /** Resident bytes of `pid` (a zombie holds none), or null when it is gone. */
  residentBytes(pid: number): number | null;
}

/** Raised when the process table cannot be read (no `ps`, a `ps` that hangs or fails). */
export class ProcessTableUnavailable extends Error {
  override name = "ProcessTableUnavailable";
}

/** Zombies (`Z`) and dead (`X`) entries count as gone: they can run no more code. */
export function isDeadState(state: string): boolean {
  return state === "Z" || state === "X";
}

/** The start identity of a live process in `table`, or null when it is gone or a zombie. */
export function liveIdentity(table: ProcessTable, pid: number): ProcessIdentity | null {
  const stat = table.stat(pid);
  if (stat === null || isDeadState(stat.state)) return null;
  return { pid: stat.pid, startTime: stat.startTime };
}

/** True when exactly this process (PID and start time) still runs in `table`. */
export function sameProcessAlive(table: ProcessTable, identity: ProcessIdentity): boolean {
  return liveIdentity(table, identity.pid)?.startTime === identity.startTime;
}

/** A live process with this identity's parent and group, as the tree walk found it. */
export interface TreeMember extends ProcessIdentity {
  ppid: number;
  pgrp: number;
}

/**
 * The live descendants of `pid` (children, their children, ...) with their start identities,
 * found through the parent links. A descendant that already left the tree (its parent died and
 * it was re-parented) is not found: callers collect while the tree is intact.
 */
export function descendantsIn(table: ProcessTable, pid: number): TreeMember[] {
  const children = new Map<number, ProcessStat[]>();
  for (const stat of table.all()) {
    if (isDeadState(stat.state)) continue;
    const siblings = children.get(stat.ppid);
    if (siblings) siblings.push(stat);
    else children.set(stat.ppid, [stat]);
  }
  const found: TreeMember[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push({
        pid: child.pid,
        startTime: child.startTime,
        ppid: child.ppid,
        pgrp: child.pgrp,
      });
      queue.push(child.pid);
    }
  }
  return found;
}

/** True while any live (non-zombie) process of `table` is in the group `pgid`. */
export function groupHasLiveMembersIn(table: ProcessTable, pgid: number): boolean {
  for (const stat of table.all()) {
    if (stat.pgrp === pgid && !isDeadState(stat.state)) return true;
  }
  return false;
}

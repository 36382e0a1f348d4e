/**
 * Stops a worker's whole process group: SIGTERM, then SIGKILL once the grace interval has passed,
 * then waits (bounded) until no live member remains. Identity-checked: see process-identity.ts.
 */
import {
  groupIsEmpty,
  isOwnReapedChild,
  isOwnRunningChild,
  type ProcessIdentity,
  type ProcessTable,
  processTable,
  ProcessTableUnavailable,
  signalGroupIn,
} from "./process-identity.ts";
import {
  descendantsIn,
  groupHasLiveMembersIn,
  isDeadState,
  sameProcessAlive,
} from "./process-table.ts";

export interface StopGroupOptions {
  /** Time between SIGTERM and SIGKILL. */
  graceMs: number;
  /** How long to wait for the group to vanish after SIGKILL before giving up. */
  killWaitMs?: number;
  /** Skip SIGTERM (deadline enforcement of a worker that may ignore it). */
  immediate?: boolean;
}

export type StopGroupResult = "alreadyGone" | "terminated" | "killed" | "stuck";

export async function stopProcessGroup(
  leader: ProcessIdentity,
  options: StopGroupOptions,
): Promise<StopGroupResult> {
  return await stopProcessTree(leader, options, false);
}

/**
 * `stopProcessGroup` for a child that may start descendants in process groups of their own (a
 * Pi's bash tool runs each command detached): the descendants are collected while the tree is
 * intact, before each signal, and every one of them is stopped too, each by exact identity. So
 * a Pi that does not clean up after itself (SIGKILLed, or stuck) leaves no tool command behind.
 */
export async function stopProcessTree(
  leader: ProcessIdentity,
  options: StopGroupOptions,
  withDescendants = true,
): Promise<StopGroupResult> {
  const tracked = new Map<string, ProcessIdentity>();
  // One table read per round: it collects the tree, tells what is gone, and backs the signals.
  const round = async (): Promise<{ table: ProcessTable | null; gone: boolean }> => {
    if (!withDescendants && quicklyGone(leader)) return { table: null, gone: true };
    let table: ProcessTable;
    try {
      table = await processTable({ fresh: true });
    } catch (error) {
      if (error instanceof ProcessTableUnavailable) return { table: null, gone: false };
      throw error;
    }
    if (withDescendants && !goneIn(table, leader)) {
      for (const d of descendantsIn(table, leader.pid)) {
        tracked.set(`${d.pid}:${d.startTime}`, { pid: d.pid, startTime: d.startTime });
      }
    }
    const gone = goneIn(table, leader) &&
      [...tracked.values()].every((d) => goneIn(table, d, false));
    return { table, gone };
  };
  const signalAll = async (signal: NodeJS.Signals) => {
    const { table } = await round();
    if (table === null) return;
    signalGroupIn(table, leader, signal);
    for (const d of tracked.values()) signalGroupIn(table, d, signal);
  };
  const allGone = async () => (await round()).gone;
  if (await allGone()) return "alreadyGone";
  if (!options.immediate) {
    await signalAll("SIGTERM");
    if (await waitUntil(allGone, options.graceMs)) return "terminated";
  }
  await signalAll("SIGKILL");
  const gone = await waitUntil(allGone, options.killWaitMs ?? 5_000);
  return gone ? "killed" : "stuck";
}

/** The leader no longer runs and no live process is left in its group. */
export async function isGone(leader: ProcessIdentity): Promise<boolean> {
  if (quicklyGone(leader)) return true;
  try {
    return goneIn(await processTable({ fresh: true }), leader);
  } catch (error) {
    if (error instanceof ProcessTableUnavailable) return false;
    throw error;
  }
}

/**
 * Gone without reading the table: a reaped child of ours whose group has no member left (the
 * usual end of a worker). A running child of ours is not gone either way.
 */
function quicklyGone(leader: ProcessIdentity): boolean {
  return !isOwnRunningChild(leader) && isOwnReapedChild(leader) && groupIsEmpty(leader.pid);
}

function goneIn(table: ProcessTable, leader: ProcessIdentity, leads = true): boolean {
  if (isOwnRunningChild(leader)) return false;
  const stat = table.stat(leader.pid);
  // Another process owns the PID now: no kernel reuses it while our group still exists.
  if (stat !== null && (stat.startTime !== leader.startTime || isOwnReapedChild(leader))) {
    return true;
  }
  // A leader that no longer leads its group is another process with its PID (and start second,
  // under `ps`): what is left to wait for is the group alone.
  const other = leads && stat !== null && stat.pgrp !== leader.pid && !isDeadState(stat.state);
  if (!other && sameProcessAlive(table, leader)) return false;
  return groupIsEmpty(leader.pid) || !groupHasLiveMembersIn(table, leader.pid);
}

/** Polls `condition` every few milliseconds until it holds or `timeoutMs` passes. */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let delay = 2;
  while (!(await condition())) {
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 25);
  }
  return true;
}

/**
 * Stops a worker's whole process group: SIGTERM, then SIGKILL once the grace interval has passed,
 * then waits (bounded) until no live member remains. Identity-checked: see process-identity.ts.
 */
import {
  descendantsOf,
  groupHasLiveMembers,
  isSameProcessAlive,
  type ProcessIdentity,
  readProcessStat,
  signalGroup,
} from "./process-identity.ts";

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
  if (isGone(leader)) return "alreadyGone";
  if (!options.immediate) {
    signalGroup(leader, "SIGTERM");
    if (await waitUntil(() => isGone(leader), options.graceMs)) return "terminated";
  }
  signalGroup(leader, "SIGKILL");
  const gone = await waitUntil(() => isGone(leader), options.killWaitMs ?? 5_000);
  return gone ? "killed" : "stuck";
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
): Promise<StopGroupResult> {
  const tracked = new Map<string, ProcessIdentity>();
  const collect = () => {
    if (isGone(leader)) return;
    for (const d of descendantsOf(leader.pid)) tracked.set(`${d.pid}:${d.startTime}`, d);
  };
  collect();
  const allGone = () => isGone(leader) && [...tracked.values()].every(isGone);
  if (allGone()) return "alreadyGone";
  const signalAll = (signal: NodeJS.Signals) => {
    collect();
    signalGroup(leader, signal);
    for (const d of tracked.values()) signalGroup(d, signal);
  };
  if (!options.immediate) {
    signalAll("SIGTERM");
    if (await waitUntil(() => (collect(), allGone()), options.graceMs)) return "terminated";
  }
  signalAll("SIGKILL");
  const gone = await waitUntil(allGone, options.killWaitMs ?? 5_000);
  return gone ? "killed" : "stuck";
}

/** The leader no longer runs and no live process is left in its group. */
export function isGone(leader: ProcessIdentity): boolean {
  const stat = readProcessStat(leader.pid);
  // Another process owns the PID now: Linux would not reuse it while our group still existed.
  if (stat !== null && stat.startTime !== leader.startTime) return true;
  return !isSameProcessAlive(leader) && !groupHasLiveMembers(leader.pid);
}

/** Polls `condition` every few milliseconds until it holds or `timeoutMs` passes. */
export async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let delay = 2;
  while (!condition()) {
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 25);
  }
  return true;
}

/**
 * What `host status` reports when no host answers: the state database, opened read-only, still
 * knows the last epoch and the run counts. Same fields and the same privacy rule as the live
 * status; nothing is written and no host is started.
 */
import { randomIds, systemClock } from "../base/clock.ts";
import { StateMissingError, StateOpenError } from "../state/errors.ts";
import { readHostEpoch } from "../state/host-claim.ts";
import { hostStatusCountFields, hostStatusCounts } from "../state/queries.ts";
import { closeStateStore, openStateStore } from "../state/store.ts";

export interface StoppedHostStatus {
  /**
   * `notAnswering`: something holds the socket but did not answer (see `socket`); `busy`: the host
   * answered that it serves its limit of connections.
   */
  state: "stopped" | "notAnswering" | "busy";
  /** The last host epoch, or null before any host ran. */
  epoch: number | null;
  /** `not answering`: something accepted a connection on the socket but never answered. */
  socket: "unavailable" | "not answering" | "busy";
  /**
   * Why a host could not start on this state (another schema digest, a damaged or unreadable
   * file), without the path: `doctor` gives the path and the fix.
   */
  problem?: string;
  /** Worker epochs still recorded as active (a host that died leaves them for recovery). */
  activeWorkers?: number;
  runs?: { queued: number; running: number; parked: number; waiting: number };
  expiredClaims?: number;
  pendingInteractions?: number;
  ambiguousEffects?: number;
}

export function readStoppedHostStatus(stateDir: string): StoppedHostStatus {
  const stopped: StoppedHostStatus = { state: "stopped", epoch: null, socket: "unavailable" };
  let store;
  try {
    // The same quick check `host start` runs: a status that reads "stopped" and counts from a
    // damaged file would hide why the next start is refused.
    store = openStateStore({
      stateDir,
      clock: systemClock,
      ids: randomIds,
      readOnly: true,
      checkIntegrity: true,
    });
  } catch (error) {
    if (error instanceof StateMissingError) return stopped;
    if (error instanceof StateOpenError) return { ...stopped, problem: error.summary };
    throw error;
  }
  try {
    const counts = hostStatusCounts(store);
    return {
      state: "stopped",
      epoch: readHostEpoch(store)?.epoch ?? null,
      socket: "unavailable",
      activeWorkers: counts.activeWorkers,
      ...hostStatusCountFields(counts),
    };
  } finally {
    closeStateStore(store);
  }
}

/**
 * What `host status` reports when no host answers: the state database, opened read-only, still
 * knows the last epoch and the run counts. Same fields and the same privacy rule as the live
 * status; nothing is written and no host is started.
 */
import { randomIds, systemClock } from "../state/clock.ts";
import { readHostEpoch } from "../state/host-claim.ts";
import { hostStatusCountFields, hostStatusCounts } from "../state/queries.ts";
import { closeStateStore, openStateStore } from "../state/store.ts";

export interface StoppedHostStatus {
  state: "stopped";
  /** The last host epoch, or null before any host ran. */
  epoch: number | null;
  socket: "unavailable";
  /** Worker epochs still recorded as active (a host that died leaves them for recovery). */
  activeWorkers?: number;
  runs?: { queued: number; running: number; parked: number; waiting: number };
  expiredClaims?: number;
  pendingInteractions?: number;
  ambiguousEffects?: number;
}

export function readStoppedHostStatus(stateDir: string): StoppedHostStatus {
  let store;
  try {
    store = openStateStore({ stateDir, clock: systemClock, ids: randomIds, readOnly: true });
  } catch {
    // No database yet (or one this build cannot read: `doctor` explains which).
    return { state: "stopped", epoch: null, socket: "unavailable" };
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

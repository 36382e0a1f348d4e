/**
 * Whether the stopped host epoch still holds the state: `host stop` returns only once that host
 * released its claim (or its process is gone), so a `host start` right after is never refused.
 * A newer epoch holding the claim (another client started a host meanwhile) does not count.
 * Read-only; a database this build cannot open counts as released (`doctor` explains it).
 */
import { isSameProcessAliveNow, parseStartIdentity } from "../os/process-identity.ts";
import { randomIds, systemClock } from "../base/clock.ts";
import { liveHostHolder } from "../state/host-claim.ts";
import { closeStateStore, openStateStore } from "../state/store.ts";

export function epochStillHoldsState(stateDir: string, epoch: number): boolean {
  let store;
  try {
    store = openStateStore({ stateDir, clock: systemClock, ids: randomIds, readOnly: true });
  } catch {
    return false;
  }
  try {
    const live = liveHostHolder(store);
    if (live === null || live.epoch !== epoch) return false;
    // Without a recorded identity (no /proc) only the lease would tell: do not wait on it.
    const holder = parseStartIdentity(live.startIdentity);
    return holder !== null && isSameProcessAliveNow(holder);
  } finally {
    closeStateStore(store);
  }
}

/**
 * Whether the state still has a live host: `host stop` returns only once the stopped host has
 * released its claim (or its process is gone), so a `host start` right after is never refused.
 * Read-only; a database this build cannot open counts as released (`doctor` explains it).
 */
import { isSameProcessAlive, parseStartIdentity } from "../os/process-identity.ts";
import { randomIds, systemClock } from "../state/clock.ts";
import { liveHostHolder } from "../state/host-claim.ts";
import { closeStateStore, openStateStore } from "../state/store.ts";

export function hostStillHoldsState(stateDir: string): boolean {
  let store;
  try {
    store = openStateStore({ stateDir, clock: systemClock, ids: randomIds, readOnly: true });
  } catch {
    return false;
  }
  try {
    // Without a recorded identity (no /proc) only the lease would tell: do not wait on it.
    const holder = parseStartIdentity(liveHostHolder(store));
    return holder !== null && isSameProcessAlive(holder);
  } finally {
    closeStateStore(store);
  }
}

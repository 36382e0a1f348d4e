/**
 * The durable registry of child process groups workers attach to host supervision
 * (`process.register`): one row per group, keyed by worker epoch and exact start identity. The
 * host keeps it so that a host restarting after it and the worker both died can still reap a
 * group nobody stops (recovery signals exact identities only, then clears the rows of the groups
 * it stopped or found gone; a stop that gave up keeps its row for the next host).
 */
import { type Claim, renewClaimInTx } from "../claims.ts";
import { type StateStore } from "../store.ts";
import { execute, queryAll } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";

export interface ChildGroupRecord {
  workerEpoch: string;
  pid: number;
  /** `/proc/PID/stat` field 22, as text. */
  startTime: string;
}

/**
 * Records a group under the live run claim, which it checks and renews in the same
 * transaction: no claim, no registration. Registering the same identity twice is harmless.
 */
export function registerChildGroup(
  store: StateStore,
  claim: Claim,
  group: ChildGroupRecord,
): void {
  writeTransaction(store, () => {
    const now = store.clock.now();
    renewClaimInTx(store, claim, now);
    execute(
      store,
      "INSERT INTO worker_child_groups (worker_epoch, pid, start_time, registered_at) " +
        "VALUES (:workerEpoch, :pid, :startTime, :now) ON CONFLICT DO NOTHING",
      { ...group, now },
    );
  });
}

/**
 * Forgets one group (its worker shut it down, or the host reaped it). Needs no claim: cleanup
 * stays possible after the run's durable end. Returns whether a row was removed.
 */
export function unregisterChildGroup(store: StateStore, group: ChildGroupRecord): boolean {
  return writeTransaction(store, () =>
    execute(
      store,
      "DELETE FROM worker_child_groups WHERE worker_epoch = :workerEpoch AND pid = :pid AND " +
        "start_time = :startTime",
      { ...group },
    ) > 0);
}

/** Every recorded group, oldest first (recovery reads them all). */
export function listChildGroups(store: StateStore): ChildGroupRecord[] {
  return queryAll<{ worker_epoch: string; pid: number; start_time: string }>(
    store,
    "SELECT worker_epoch, pid, start_time FROM worker_child_groups ORDER BY registered_at",
  ).map((r) => ({ workerEpoch: r.worker_epoch, pid: r.pid, startTime: r.start_time }));
}

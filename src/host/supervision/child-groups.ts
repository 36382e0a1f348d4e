/**
 * Reaping the child process groups workers registered (`process.register`) from their durable
 * records (`worker_child_groups`), after a host restart: a group is signalled only while its
 * leader runs with the exact recorded start identity (a reused PID is never signalled). Recovery
 * runs before the host launches any worker, so every record belongs to an earlier host and is
 * removed afterwards.
 */
import { clearChildGroups, listChildGroups } from "../../state/transitions/child-groups.ts";
import { forgetHostChild, listHostChildren } from "../../state/transitions/host-children.ts";
import type { StateStore } from "../../state/store.ts";
import { type ProcessIdentity, processTable } from "../../os/process-identity.ts";
import { sameProcessAlive } from "../../os/process-table.ts";
import { stopProcessGroup, stopProcessTree } from "../../os/stop-group.ts";

/** Returns how many groups were signalled. */
export async function reapRecordedChildGroups(store: StateStore, graceMs: number): Promise<number> {
  const records = listChildGroups(store);
  const alive = await filterAlive(records);
  await Promise.all(alive.map((identity) => stopProcessTree(identity, { graceMs })));
  for (const epoch of new Set(records.map((r) => r.workerEpoch))) clearChildGroups(store, epoch);
  return alive.length;
}

/**
 * The validation and resolver children an earlier host left (`host_children`): each leads its
 * own group, which is stopped while its leader runs with the exact recorded identity (a child
 * stuck in synchronous workflow code never noticed its channel close). Every row is cleared.
 * Returns how many groups were signalled.
 */
export async function reapRecordedHostChildren(
  store: StateStore,
  graceMs: number,
): Promise<number> {
  const records = listHostChildren(store);
  const alive = await filterAlive(records);
  await Promise.all(alive.map((identity) => stopProcessGroup(identity, { graceMs })));
  for (const record of records) forgetHostChild(store, record);
  return alive.length;
}

/** The records whose process runs with the exact recorded identity (one table read). */
async function filterAlive<T extends ProcessIdentity>(records: T[]): Promise<T[]> {
  if (records.length === 0) return [];
  const table = await processTable({ fresh: true });
  return records.filter((record) => sameProcessAlive(table, record));
}

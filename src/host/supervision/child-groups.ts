/**
 * Reaping the child process groups workers registered (`process.register`) from their durable
 * records (`worker_child_groups`), and the host's validation and resolver children
 * (`host_children`), after a host restart. A group is signalled only while its leader is there
 * with the exact recorded start identity, a zombie leader included (its live members are still
 * ours; a leader reaped already leaves no proof that a group with its PID is ours, and a reused PID
 * is never signalled). Recovery runs before the host launches any worker, so every record belongs
 * to an earlier host: it is removed afterwards unless the stop gave up (the group still there
 * after SIGKILL, or no table to see it go), so the next start tries again.
 */
import { listChildGroups, unregisterChildGroup } from "../../state/transitions/child-groups.ts";
import { forgetHostChild, listHostChildren } from "../../state/transitions/host-children.ts";
import type { StateStore } from "../../state/store.ts";
import { type ProcessIdentity, processTable } from "../../os/process-identity.ts";
import { type StopGroupResult, stopProcessGroup, stopProcessTree } from "../../os/stop-group.ts";

/** Returns how many groups were signalled. */
export async function reapRecordedChildGroups(store: StateStore, graceMs: number): Promise<number> {
  const stop = (leader: ProcessIdentity) => stopProcessTree(leader, { graceMs });
  return await reap(listChildGroups(store), stop, (record) => unregisterChildGroup(store, record));
}

/**
 * The validation and resolver children an earlier host left: each leads its own group (a child
 * stuck in synchronous workflow code never noticed its channel close). Returns how many groups
 * were signalled.
 */
export async function reapRecordedHostChildren(
  store: StateStore,
  graceMs: number,
): Promise<number> {
  const stop = (leader: ProcessIdentity) => stopProcessGroup(leader, { graceMs });
  return await reap(listHostChildren(store), stop, (record) => forgetHostChild(store, record));
}

async function reap<T extends ProcessIdentity>(
  records: T[],
  stop: (leader: T) => Promise<StopGroupResult>,
  forget: (record: T) => unknown,
): Promise<number> {
  if (records.length === 0) return 0;
  const table = await processTable({ fresh: true });
  const ours = records.filter((record) => table.stat(record.pid)?.startTime === record.startTime);
  const results = new Map(await Promise.all(ours.map(async (r) => [r, await stop(r)] as const)));
  for (const record of records) if (results.get(record) !== "stuck") forget(record);
  return [...results.values()].filter((result) => result !== "alreadyGone").length;
}

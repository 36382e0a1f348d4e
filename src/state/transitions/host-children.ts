/**
 * The durable registry of the host's children that are not run workers (validation children,
 * source resolvers): one row per live child, keyed by its exact start identity. A host that
 * dies leaves its rows; the next host's recovery stops the children that still run with the
 * exact identity (a reused PID is never signalled) and clears every row but those whose stop gave
 * up (the next start tries again). Workers are named in `run_workers`, the groups they register
 * in `worker_child_groups`.
 */
import { type StateStore } from "../store.ts";
import { execute, queryAll } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";

export type HostChildKind = "validator" | "resolver";

export interface HostChildRecord {
  pid: number;
  /** `/proc/PID/stat` field 22, as text. */
  startTime: string;
  kind: HostChildKind;
  /** The run a validation child works for; null for a resolver. */
  runId: string | null;
}

/** Names a child the host just started. Recording the same identity twice is harmless. */
export function recordHostChild(store: StateStore, child: HostChildRecord): void {
  writeTransaction(store, () => {
    execute(
      store,
      "INSERT INTO host_children (pid, start_time, kind, run_id, registered_at) " +
        "VALUES (:pid, :startTime, :kind, :runId, :now) ON CONFLICT DO NOTHING",
      { ...child, now: store.clock.now() },
    );
  });
}

/** Forgets a child whose group is gone. Returns whether a row was removed. */
export function forgetHostChild(
  store: StateStore,
  identity: { pid: number; startTime: string },
): boolean {
  return writeTransaction(
    store,
    () =>
      execute(store, "DELETE FROM host_children WHERE pid = :pid AND start_time = :startTime", {
        pid: identity.pid,
        startTime: identity.startTime,
      }) > 0,
  );
}

/** Every recorded child, oldest first (recovery reads them all). */
export function listHostChildren(store: StateStore): HostChildRecord[] {
  return queryAll<{ pid: number; start_time: string; kind: HostChildKind; run_id: string | null }>(
    store,
    "SELECT pid, start_time, kind, run_id FROM host_children ORDER BY registered_at",
  ).map((r) => ({ pid: r.pid, startTime: r.start_time, kind: r.kind, runId: r.run_id }));
}

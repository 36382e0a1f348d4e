/**
 * The host's one registry of the process groups it supervises, keyed by PID and start identity
 * (`pid:starttime`), never by PID alone. Workers and resolver children are registered at spawn
 * and removed when their group is gone. Children a worker attaches with `process.register`
 * (a shell node's command, later a headless Pi) are kept on that worker's record and reaped with
 * it. Durable copies of worker identities live in `run_workers`, of registered children in
 * `worker_child_groups` (transitions/child-groups.ts), and of validation and resolver children
 * in `host_children` (written here), so a restarted host can reap exact matches.
 */
import { formatStartIdentity, type ProcessIdentity } from "../../os/process-identity.ts";
import { stopProcessGroup } from "../../os/stop-group.ts";
import type { StateStore } from "../../state/store.ts";
import { forgetHostChild, recordHostChild } from "../../state/transitions/host-children.ts";

export interface RegisteredProcess {
  identity: ProcessIdentity;
  kind: "worker" | "resolver" | "validator";
  /** The run it works for; null for a resolver. */
  runId: string | null;
}

export interface ProcessRegistry {
  register(entry: RegisteredProcess): void;
  unregister(identity: ProcessIdentity): void;
  has(identity: ProcessIdentity): boolean;
  size(): number;
  /** Stops every registered group (host shutdown); resolves when all are gone. */
  stopAll(graceMs: number): Promise<void>;
}

/**
 * With `durable`, validation and resolver children are also named in `host_children` while they
 * live (workers have their own durable record). A failed write is reported to `onWriteFailed`
 * and does not stop supervision: the in-memory entry still stops the child at shutdown.
 */
export function createProcessRegistry(
  durable?: { store: StateStore; onWriteFailed(error: unknown): void },
): ProcessRegistry {
  const entries = new Map<string, RegisteredProcess>();
  const write = (fn: (store: StateStore) => void) => {
    if (!durable) return;
    try {
      fn(durable.store);
    } catch (error) {
      durable.onWriteFailed(error);
    }
  };
  return {
    register(entry) {
      entries.set(formatStartIdentity(entry.identity), entry);
      if (entry.kind === "worker") return;
      const kind = entry.kind;
      write((store) => recordHostChild(store, { ...entry.identity, kind, runId: entry.runId }));
    },
    unregister(identity) {
      const key = formatStartIdentity(identity);
      const entry = entries.get(key);
      entries.delete(key);
      if (entry && entry.kind !== "worker") write((store) => forgetHostChild(store, identity));
    },
    has(identity) {
      return entries.has(formatStartIdentity(identity));
    },
    size() {
      return entries.size;
    },
    async stopAll(graceMs) {
      await Promise.all(
        [...entries.values()].map((entry) => stopProcessGroup(entry.identity, { graceMs })),
      );
    },
  };
}

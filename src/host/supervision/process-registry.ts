/**
 * The host's one registry of the process groups it supervises, keyed by PID and start identity
 * (`pid:starttime`), never by PID alone. Workers and resolver children are registered at spawn
 * and removed when their group is gone. Children a worker attaches with `process.register`
 * (a shell node's command, later a headless Pi) are kept on that worker's record and reaped with
 * it. Durable copies of worker identities live in `run_workers`, and of registered children in
 * `worker_child_groups` (transitions/child-groups.ts), so a restarted host can reap exact matches.
 */
import { formatStartIdentity, type ProcessIdentity } from "../../os/process-identity.ts";
import { stopProcessGroup } from "../../os/stop-group.ts";

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

export function createProcessRegistry(): ProcessRegistry {
  const entries = new Map<string, RegisteredProcess>();
  return {
    register(entry) {
      entries.set(formatStartIdentity(entry.identity), entry);
    },
    unregister(identity) {
      entries.delete(formatStartIdentity(identity));
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

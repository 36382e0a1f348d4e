/**
 * The `host.status` receipt: exactly the spec's list (host state and epoch, socket, active
 * workers, run counts, expired claims, pending interactions, ambiguous effects). Counts come from
 * the state store; the active worker count from the supervision, which knows its live processes.
 * Nothing here names a run, a session, a path or a payload.
 */
import type { HostStatusReceipt } from "../protocol/host-operations.ts";
import { hostStatusCountFields, hostStatusCounts } from "../state/queries.ts";
import { scheduleCounts } from "../state/schedules/schedule-queries.ts";
import type { HostRuntime } from "./host-runtime.ts";

export function hostStatus(rt: HostRuntime): HostStatusReceipt {
  const counts = hostStatusCounts(rt.store, rt.clock.now());
  return {
    state: rt.phase(),
    epoch: rt.epoch,
    socket: rt.socketAvailable() ? "available" : "unavailable",
    activeWorkers: rt.supervision.activeWorkerCount(),
    ...hostStatusCountFields(counts),
    schedules: scheduleCounts(rt.store),
    version: rt.version,
  };
}

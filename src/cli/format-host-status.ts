/**
 * `pi-workflows host status` for people: exactly the spec's list and nothing that identifies a
 * person, session, path or payload (the receipt carries nothing else to print).
 */
import type { HostStatusReceipt } from "../protocol/host-operations.ts";

export function formatHostStatus(status: HostStatusReceipt): string {
  return [
    `host: ${status.state} (epoch ${status.epoch})`,
    `socket: ${status.socket}`,
    `active workers: ${status.activeWorkers}`,
    `runs: ${status.runs.queued} queued, ${status.runs.running} running, ${status.runs.parked} parked, ${status.runs.waiting} waiting`,
    `expired claims: ${status.expiredClaims}`,
    `pending interactions: ${status.pendingInteractions}`,
    `ambiguous effects: ${status.ambiguousEffects}`,
  ].join("\n");
}

/** What `host status` prints when no host answers: the socket is the only thing to report. */
export function formatHostStopped(lastEpoch: number | null): string {
  return [
    `host: stopped${lastEpoch === null ? "" : ` (last epoch ${lastEpoch})`}`,
    "socket: unavailable",
  ].join("\n");
}

/**
 * `pi-workflows host status` for people: exactly the spec's list and nothing that identifies a
 * person, session, path or payload (the receipt carries nothing else to print).
 */
import type { HostStatusReceipt } from "../protocol/host-operations.ts";
import type { StoppedHostStatus } from "./stopped-host-status.ts";

export function formatHostStatus(status: HostStatusReceipt): string {
  const lines = [
    `host: ${status.state} (epoch ${status.epoch})`,
    `socket: ${status.socket}`,
    `active workers: ${status.activeWorkers}`,
    `runs: ${status.runs.queued} queued, ${status.runs.running} running, ${status.runs.parked} parked, ${status.runs.waiting} waiting`,
    `expired claims: ${status.expiredClaims}`,
    `pending interactions: ${status.pendingInteractions}`,
    `ambiguous effects: ${ambiguousText(status.ambiguousEffects)}`,
  ];
  if (status.schedules) lines.push(scheduleLine(status.schedules));
  return lines.join("\n");
}

/** `schedules: 2 enabled, 1 paused (next slot 2026-...Z)`: enabled ones keep the host running. */
function scheduleLine(s: NonNullable<HostStatusReceipt["schedules"]>): string {
  const next = s.nextFireAt === null ? "" : ` (next slot ${new Date(s.nextFireAt).toISOString()})`;
  return `schedules: ${s.enabled} enabled, ${s.paused} paused${next}`;
}

const HOST_STATE_TEXT: Record<StoppedHostStatus["state"], string> = {
  stopped: "stopped",
  notAnswering: "not answering",
  busy: "busy (running, but serving its limit of connections)",
};

const SOCKET_TEXT: Record<StoppedHostStatus["socket"], string> = {
  unavailable: "unavailable",
  "not answering": "not answering (a process accepts connections but did not answer: frozen or " +
    "overloaded; stop it, or a new host takes over once its lease expires)",
  busy: "busy (every connection the host allows is open; retry shortly)",
};

/** What `host status` prints when no host answers (counts from the read-only database). */
export function formatHostStopped(status: StoppedHostStatus): string {
  const lines = [
    `host: ${HOST_STATE_TEXT[status.state]}${
      status.epoch === null ? "" : ` (last epoch ${status.epoch})`
    }`,
    `socket: ${SOCKET_TEXT[status.socket]}`,
  ];
  if (status.problem) {
    lines.push(
      `problem: the state cannot be used: ${status.problem}; 'pi-workflows doctor' says how to fix it`,
    );
  }
  if (status.runs) {
    lines.push(
      `recorded active workers: ${status.activeWorkers}`,
      `runs: ${status.runs.queued} queued, ${status.runs.running} running, ${status.runs.parked} parked, ${status.runs.waiting} waiting`,
      `expired claims: ${status.expiredClaims}`,
      `pending interactions: ${status.pendingInteractions}`,
      `ambiguous effects: ${ambiguousText(status.ambiguousEffects ?? 0)}`,
    );
  }
  return lines.join("\n");
}

/**
 * The count, and while there are any how they go away: they stay (a cancelled or failed run's
 * too) until someone checks the external system and records what happened.
 */
function ambiguousText(count: number): string {
  return count === 0
    ? "0"
    : `${count} (each stays, an ended run's too, until what happened is recorded: its run's ` +
      "status names the 'pi-workflows effect resolve' command)";
}

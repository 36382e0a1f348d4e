/**
 * Schedules as text, for the CLI and the Pi extension alike: one line per schedule in a list,
 * and a detail view with its latest firings. A cron schedule's times are shown in its own zone
 * (the wall time it fires at); an interval's in UTC.
 */
import type { OperationReceipt } from "../protocol/host-operations.ts";
import type { ScheduleFiringView, ScheduleView } from "../protocol/schedule-operations.ts";
import { shortRunId } from "../base/run-id-text.ts";
import { formatAge } from "./format.ts";

/** `2026-12-07 09:00 Europe/Berlin (in 3h04m)`. */
export function formatSlot(at: number, zone: string, now: number): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-CA", {
      timeZone: zone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
    }).formatToParts(new Date(at)).map((p) => [p.type, p.value]),
  );
  const seconds = parts.second === "00" ? "" : `:${parts.second}`;
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}${seconds} ${zone} (${
    formatAge(at, now)
  })`;
}

function zoneOf(s: ScheduleView): string {
  return s.timeZone ?? "UTC";
}

export function formatTiming(s: ScheduleView): string {
  return s.cron !== undefined ? `cron "${s.cron}" (${zoneOf(s)})` : `every ${s.every}`;
}

function stateText(s: ScheduleView, now: number): string {
  if (s.state === "paused") return s.pausedReason ? `paused: ${s.pausedReason}` : "paused";
  return s.nextFireAt === null ? "enabled" : `next ${formatSlot(s.nextFireAt, zoneOf(s), now)}`;
}

/** `nightly  audit  cron "0 9 * * 1-5" (Europe/Berlin)  next 2026-12-07 09:00 ...`. */
export function formatScheduleLine(s: ScheduleView, now: number): string {
  return `${s.name}  ${s.workflowName}  ${formatTiming(s)}  ${stateText(s, now)}`;
}

export function formatScheduleList(
  receipt: OperationReceipt<"schedule.list">,
  now: number,
): string {
  if (receipt.schedules.length === 0) {
    return "No schedules (add one with 'pi-workflows schedule add')";
  }
  return receipt.schedules.map((s) => formatScheduleLine(s, now)).join("\n");
}

/** A firing's run as other run ids are shown (`run-1a2b3c4d`, a prefix every command takes). */
function runText(f: ScheduleFiringView): string {
  return f.runId ? shortRunId(f.runId) : "";
}

function firingText(f: ScheduleFiringView, zone: string, now: number): string {
  const slot = formatSlot(f.slotAt, zone, now);
  switch (f.state) {
    case "started":
      return `${slot}  started ${runText(f)}${f.held ? " (waiting for the previous run)" : ""}`;
    case "failed":
      return `${slot}  failed ${runText(f)}: ${f.reason ?? ""}`;
    case "skipped":
      return `${slot}  skipped (${
        f.reason === "queueFull"
          ? "too many runs waiting"
          : f.reason === "superseded"
          ? "a later slot came before it started"
          : "the previous run was active or starting"
      })`;
    default:
      return `${slot}  starting`;
  }
}

export function formatScheduleDetail(
  receipt: OperationReceipt<"schedule.show">,
  now: number,
): string {
  const s = receipt.schedule;
  const lines = [
    `${s.name}: ${s.state}`,
    `workflow: ${s.workflowName} (${s.workflow})`,
    `timing: ${formatTiming(s)}`,
    `overlap: ${s.overlap}, catch-up: ${s.catchUp}`,
  ];
  if (s.state === "paused" && s.pausedReason) lines.push(`paused: ${s.pausedReason}`);
  if (s.nextFireAt !== null) lines.push(`next: ${formatSlot(s.nextFireAt, zoneOf(s), now)}`);
  if (s.missedSlots > 0) lines.push(`missed while no host ran: ${s.missedSlots} slot(s)`);
  if (s.loadFailures > 0) lines.push(`load failures in a row: ${s.loadFailures}`);
  if (receipt.firings.length === 0) lines.push("firings: none yet");
  else {
    lines.push("firings (newest first):");
    for (const f of receipt.firings) lines.push(`  ${firingText(f, zoneOf(s), now)}`);
  }
  return lines.join("\n");
}

/** The one line a change prints: `Added schedule nightly: next ...`. */
export function formatScheduleChange(verb: string, s: ScheduleView, now: number): string {
  return `${verb} schedule ${s.name} (${s.workflowName}, ${formatTiming(s)}): ${stateText(s, now)}`;
}

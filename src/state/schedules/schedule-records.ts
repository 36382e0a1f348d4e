/**
 * Schedule records (docs/schedules.md) and their command transitions: pause, resume, remove. Each
 * commits the change and its command receipt in one transaction. Adding or replacing one lives in
 * schedule-upsert.ts, firing in schedule-firing.ts.
 */
import { type JsonValue, sha256Hex } from "../../protocol/canonical-json.ts";
import type { PiLaunch } from "../../protocol/pi-launch.ts";
import type { ScheduleView } from "../../protocol/schedule-operations.ts";
import {
  type CatchUpPolicy,
  formatEvery,
  nextSlotAfter,
  type OverlapPolicy,
  type ScheduleTiming,
} from "../../base/schedule-timing.ts";
import { RefusedError } from "../errors.ts";
import { type CommandReceiptInput, recordHostCommandInTx } from "../host-commands.ts";
import { type StateStore } from "../store.ts";
import { execute, queryAll, queryOne } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { decodeValue } from "../values.ts";

/**
 * The `available_at` of a run held by `queue` overlap: the far end of time (the largest Date), so
 * the scheduler never launches it until the `schedule_queue_release` trigger moves it to now.
 */
export const HELD_AVAILABLE_AT = 8_640_000_000_000_000;

/**
 * The run id of a schedule's slot: the same for every retry of that firing, derived from the
 * schedule and the slot (a digest of both), in the shape of every other run id (`run-<uuid>`,
 * version 8) so that it is shown, abbreviated and typed the same way (`run-1a2b3c4d`).
 */
export function scheduleRunId(scheduleId: string, slotAt: number): string {
  const hex = sha256Hex(`${scheduleId}\n${slotAt}`);
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `run-${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${
    hex.slice(17, 20)
  }-${hex.slice(20, 32)}`;
}

export interface ScheduleRow {
  schedule_id: string;
  name: string;
  workflow: string;
  workflow_name: string;
  workflow_ref: string;
  project_path: string;
  cron: string | null;
  time_zone: string | null;
  every_ms: number | null;
  anchor_at: number | null;
  overlap: OverlapPolicy;
  catch_up: CatchUpPolicy;
  input_json: string;
  input_hash: string;
  workflow_source_json: string;
  definition_digest: string;
  env_json: string;
  credential_names_json: string;
  run_secret_names_json: string;
  pi_command: string | null;
  pi_args_json: string | null;
  origin: "command" | "file";
  paused: number;
  paused_reason: string | null;
  next_fire_at: number | null;
  last_fired_at: number | null;
  missed_slots: number;
  load_failures: number;
  revision: number;
  created_at: number;
  updated_at: number;
}

export function timingOf(row: ScheduleRow): ScheduleTiming {
  return row.cron !== null
    ? { kind: "cron", cron: row.cron, timeZone: row.time_zone ?? "UTC" }
    : { kind: "every", everyMs: row.every_ms!, anchorAt: row.anchor_at! };
}

export function findSchedule(store: StateStore, name: string): ScheduleRow | undefined {
  return queryOne<ScheduleRow>(store, "SELECT * FROM schedules WHERE name = :name", { name });
}

export function scheduleById(store: StateStore, scheduleId: string): ScheduleRow | undefined {
  return queryOne<ScheduleRow>(store, "SELECT * FROM schedules WHERE schedule_id = :scheduleId", {
    scheduleId,
  });
}

export function listScheduleRows(store: StateStore): ScheduleRow[] {
  return queryAll<ScheduleRow>(store, "SELECT * FROM schedules ORDER BY name");
}

/** What clients see of a schedule: no input, environment, credentials or project path. */
export function scheduleView(row: ScheduleRow): ScheduleView {
  return {
    name: row.name,
    workflow: row.workflow,
    workflowName: row.workflow_name,
    ...(row.cron !== null
      ? { cron: row.cron, timeZone: row.time_zone ?? "UTC" }
      : { every: formatEvery(row.every_ms!) }),
    overlap: row.overlap,
    catchUp: row.catch_up,
    state: row.paused ? "paused" : "enabled",
    pausedReason: row.paused_reason,
    nextFireAt: row.next_fire_at,
    lastFiredAt: row.last_fired_at,
    missedSlots: row.missed_slots,
    loadFailures: row.load_failures,
    revision: row.revision,
    createdAt: row.created_at,
  };
}

export function scheduleNotFound(name: string): RefusedError {
  return new RefusedError(
    "notFound",
    "scheduleNotFound",
    `No schedule named "${name}" (see 'pi-workflows schedule list')`,
  );
}

/** Stops firing: `next_fire_at` NULL. Firings already committed still start their runs. */
export function pauseSchedule(
  store: StateStore,
  name: string,
  receipt?: CommandReceiptInput,
): ScheduleView {
  return changeSchedule(store, name, receipt, (row, now) => {
    if (row.paused) return;
    execute(
      store,
      "UPDATE schedules SET paused = 1, paused_reason = NULL, next_fire_at = NULL, " +
        "revision = revision + 1, updated_at = :now WHERE schedule_id = :id",
      { id: row.schedule_id, now },
    );
  });
}

/**
 * Fires again from the next slot after now (missed slots of the pause are not made up) and
 * forgets earlier load failures. Resuming an enabled schedule changes nothing.
 */
export function resumeSchedule(
  store: StateStore,
  name: string,
  receipt?: CommandReceiptInput,
): ScheduleView {
  return changeSchedule(store, name, receipt, (row, now) => {
    if (!row.paused) return;
    const next = nextSlotAfter(timingOf(row), now);
    if (next === null) {
      throw new RefusedError(
        "rejected",
        "invalidSchedule",
        `Cannot resume "${name}": its cron expression has no future slot`,
      );
    }
    execute(
      store,
      "UPDATE schedules SET paused = 0, paused_reason = NULL, next_fire_at = :next, " +
        "load_failures = 0, revision = revision + 1, updated_at = :now " +
        "WHERE schedule_id = :id",
      { id: row.schedule_id, next, now },
    );
  });
}

/** One transaction: find the schedule by name, apply `change`, answer (and record) its view. */
function changeSchedule(
  store: StateStore,
  name: string,
  receipt: CommandReceiptInput | undefined,
  change: (row: ScheduleRow, now: number) => void,
): ScheduleView {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const row = findSchedule(store, name);
    if (!row) throw scheduleNotFound(name);
    change(row, now);
    const view = scheduleView(scheduleById(store, row.schedule_id)!);
    recordReceipt(store, receipt, { schedule: view }, now);
    return view;
  });
}

/**
 * Deletes the schedule and its firings. Its runs are ordinary runs and stay; one still held by
 * `queue` overlap is released (it starts when the scheduler has room), since nothing would
 * release it any more.
 */
export function removeSchedule(
  store: StateStore,
  name: string,
  receipt?: CommandReceiptInput,
): { removed: boolean } {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const row = findSchedule(store, name);
    if (!row) throw scheduleNotFound(name);
    execute(
      store,
      "UPDATE run_queue SET available_at = :now, updated_at = :now WHERE state = 'queued' AND " +
        "available_at = :held AND run_id IN (SELECT run_id FROM schedule_firings " +
        "WHERE schedule_id = :id AND run_id IS NOT NULL)",
      { id: row.schedule_id, now, held: HELD_AVAILABLE_AT },
    );
    execute(store, "DELETE FROM schedule_firings WHERE schedule_id = :id", {
      id: row.schedule_id,
    });
    execute(store, "DELETE FROM schedules WHERE schedule_id = :id", { id: row.schedule_id });
    recordReceipt(store, receipt, { name, removed: true }, now);
    return { removed: true };
  });
}

/** Records a schedule command's receipt in the open transaction (when the command has one). */
export function recordReceipt(
  store: StateStore,
  receipt: CommandReceiptInput | undefined,
  body: unknown,
  now: number,
): void {
  if (!receipt) return;
  recordHostCommandInTx(store, { ...receipt, receipt: body as JsonValue }, {
    runId: null,
    revision: null,
    now,
  });
}

/** The Pi launch a schedule's runs use, or null. */
export function piLaunchOf(row: ScheduleRow): PiLaunch | null {
  if (row.pi_command === null) return null;
  return { command: row.pi_command, args: (decodeValue(row.pi_args_json) ?? []) as string[] };
}

/**
 * Schedule records (docs/schedules.md) and their command transitions: add or replace (from a
 * command or a workflow file's declaration), pause, resume, remove. Each commits the change and
 * its command receipt in one transaction. Firing lives in schedule-firing.ts.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { PiLaunch } from "../../protocol/pi-launch.ts";
import type { RunEnvironment } from "../../protocol/run-environment.ts";
import type { ScheduleView } from "../../protocol/schedule-operations.ts";
import {
  type CatchUpPolicy,
  formatEvery,
  nextSlotAfter,
  type OverlapPolicy,
  type ScheduleTiming,
} from "../../protocol/schedule-timing.ts";
import { RefusedError } from "../errors.ts";
import { type CommandReceiptInput, recordHostCommandInTx } from "../host-commands.ts";
import { type StateStore } from "../store.ts";
import { execute, queryAll, queryOne } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { decodeValue, encodeValue } from "../values.ts";

/**
 * The `available_at` of a run held by `queue` overlap: the far end of time (the largest Date), so
 * the scheduler never launches it until the `schedule_queue_release` trigger moves it to now.
 */
export const HELD_AVAILABLE_AT = 8_640_000_000_000_000;

/** The run id of a schedule's slot: the same for every retry of that firing. */
export function scheduleRunId(scheduleId: string, slotAt: number): string {
  return `run-${scheduleId}-${slotAt}`;
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

/** Everything a schedule records, as the host resolved it. */
export interface ScheduleInput {
  name: string;
  /** The workflow as the user named it; resolved again at every firing. */
  workflow: string;
  workflowName: string;
  /** The canonical reference it resolved to (`builtin:x` or an absolute path). */
  workflowRef: string;
  projectPath: string;
  /** The timing; an `every` timing's anchor is set here (now) unless it is kept. */
  timing: { kind: "cron"; cron: string; timeZone: string } | { kind: "every"; everyMs: number };
  overlap: OverlapPolicy;
  catchUp: CatchUpPolicy;
  /** The input as given (normalized again at every firing) and the hash of its last normalization. */
  input: JsonValue;
  inputHash: string;
  workflowSource: JsonValue;
  definitionDigest: string;
  env: RunEnvironment;
  credentialNames: readonly string[];
  pi: PiLaunch | null;
  origin: "command" | "file";
}

export interface UpsertScheduleResult {
  scheduleId: string;
  schedule: ScheduleView;
  created: boolean;
  changed: boolean;
}

/**
 * Adds a schedule, or with `replace` changes the one of that name: a changed timing starts from
 * now (the next slot after it); an unchanged one keeps its next slot. A paused schedule stays
 * paused. Without `replace` an existing name is refused.
 */
export function upsertSchedule(
  store: StateStore,
  input: ScheduleInput,
  opts: { replace: boolean; receipt?: CommandReceiptInput },
): UpsertScheduleResult {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const existing = findSchedule(store, input.name);
    if (existing && !opts.replace) {
      throw new RefusedError(
        "conflict",
        "scheduleExists",
        `A schedule named "${input.name}" exists already: remove it first, or replace it (--replace)`,
      );
    }
    const sameTiming = existing !== undefined && sameTimingAs(existing, input.timing);
    const timing: ScheduleTiming = input.timing.kind === "cron"
      ? input.timing
      : { ...input.timing, anchorAt: sameTiming ? existing!.anchor_at! : now };
    const paused = existing?.paused === 1;
    const next = paused ? null : sameTiming ? existing!.next_fire_at : nextSlotAfter(timing, now);
    if (!paused && next === null) {
      throw new RefusedError(
        "rejected",
        "invalidSchedule",
        "The cron expression has no future slot",
      );
    }
    const fields = {
      name: input.name,
      workflow: input.workflow,
      workflowName: input.workflowName,
      workflowRef: input.workflowRef,
      inputHash: input.inputHash,
      projectPath: input.projectPath,
      cron: timing.kind === "cron" ? timing.cron : null,
      timeZone: timing.kind === "cron" ? timing.timeZone : null,
      everyMs: timing.kind === "every" ? timing.everyMs : null,
      anchorAt: timing.kind === "every" ? timing.anchorAt : null,
      overlap: input.overlap,
      catchUp: input.catchUp,
      input: encodeValue("schedule input", input.input),
      source: encodeValue("workflowSource", input.workflowSource),
      digest: input.definitionDigest,
      env: encodeValue("environment", input.env),
      names: JSON.stringify([...input.credentialNames].sort()),
      piCommand: input.pi?.command ?? null,
      piArgs: input.pi ? encodeValue("pi args", [...input.pi.args]) : null,
      origin: input.origin,
      next,
      now,
    };
    let scheduleId: string;
    let changed = true;
    if (existing) {
      scheduleId = existing.schedule_id;
      changed = !sameTiming || describeInput(existing) !== describeFields(fields);
      execute(
        store,
        "UPDATE schedules SET workflow = :workflow, workflow_name = :workflowName, " +
          "workflow_ref = :workflowRef, input_hash = :inputHash, " +
          "project_path = :projectPath, cron = :cron, time_zone = :timeZone, " +
          "every_ms = :everyMs, anchor_at = :anchorAt, overlap = :overlap, " +
          "catch_up = :catchUp, input_json = :input, workflow_source_json = :source, " +
          "definition_digest = :digest, env_json = :env, credential_names_json = :names, " +
          "pi_command = :piCommand, pi_args_json = :piArgs, origin = :origin, " +
          "next_fire_at = :next, revision = revision + :bump, updated_at = :now " +
          "WHERE schedule_id = :scheduleId",
        { ...withoutName(fields), scheduleId, bump: changed ? 1 : 0 },
      );
    } else {
      scheduleId = store.ids.next("sch");
      execute(
        store,
        "INSERT INTO schedules (schedule_id, name, workflow, workflow_name, workflow_ref, " +
          "project_path, cron, time_zone, every_ms, anchor_at, overlap, catch_up, input_json, " +
          "input_hash, " +
          "workflow_source_json, definition_digest, env_json, credential_names_json, " +
          "pi_command, pi_args_json, origin, paused, next_fire_at, revision, created_at, " +
          "updated_at) VALUES (:scheduleId, :name, :workflow, :workflowName, :workflowRef, " +
          ":projectPath, :cron, :timeZone, :everyMs, :anchorAt, :overlap, :catchUp, :input, " +
          ":inputHash, :source, " +
          ":digest, :env, :names, :piCommand, :piArgs, :origin, 0, :next, 1, :now, :now)",
        { ...fields, scheduleId },
      );
    }
    const row = scheduleById(store, scheduleId)!;
    const result = { scheduleId, schedule: scheduleView(row), created: !existing, changed };
    recordReceipt(store, opts.receipt, {
      schedule: result.schedule,
      created: result.created,
      changed,
    }, now);
    return result;
  });
}

function withoutName<T extends { name: string }>(fields: T): Omit<T, "name"> {
  const { name: _name, ...rest } = fields;
  return rest;
}

function sameTimingAs(row: ScheduleRow, timing: ScheduleInput["timing"]): boolean {
  return timing.kind === "cron"
    ? row.cron === timing.cron && row.time_zone === timing.timeZone
    : row.every_ms === timing.everyMs;
}

/** The fields a replace compares (not the timing: compared apart, nor times and ids). */
function describeFields(f: {
  workflow: string;
  projectPath: string;
  overlap: string;
  catchUp: string;
  input: string;
  env: string;
  names: string;
  piCommand: string | null;
  piArgs: string | null;
  digest: string;
}): string {
  return JSON.stringify([
    f.workflow,
    f.projectPath,
    f.overlap,
    f.catchUp,
    f.input,
    f.env,
    f.names,
    f.piCommand,
    f.piArgs,
    f.digest,
  ]);
}

function describeInput(row: ScheduleRow): string {
  return describeFields({
    workflow: row.workflow,
    projectPath: row.project_path,
    overlap: row.overlap,
    catchUp: row.catch_up,
    input: row.input_json,
    env: row.env_json,
    names: row.credential_names_json,
    piCommand: row.pi_command,
    piArgs: row.pi_args_json,
    digest: row.definition_digest,
  });
}

/** Stops firing: `next_fire_at` NULL. Firings already committed still start their runs. */
export function pauseSchedule(
  store: StateStore,
  name: string,
  receipt?: CommandReceiptInput,
): ScheduleView {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const row = findSchedule(store, name);
    if (!row) throw scheduleNotFound(name);
    if (!row.paused) {
      execute(
        store,
        "UPDATE schedules SET paused = 1, paused_reason = NULL, next_fire_at = NULL, " +
          "revision = revision + 1, updated_at = :now WHERE schedule_id = :id",
        { id: row.schedule_id, now },
      );
    }
    const view = scheduleView(scheduleById(store, row.schedule_id)!);
    recordReceipt(store, receipt, { schedule: view }, now);
    return view;
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
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const row = findSchedule(store, name);
    if (!row) throw scheduleNotFound(name);
    if (row.paused) {
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
    }
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

function recordReceipt(
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

/**
 * Adding or replacing a schedule (docs/schedules.md), from a command or a workflow file's
 * declaration: the change and its command receipt in one transaction.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { PiLaunch } from "../../protocol/pi-launch.ts";
import type { RunEnvironment } from "../../protocol/run-environment.ts";
import type { ScheduleView } from "../../protocol/schedule-operations.ts";
import {
  type CatchUpPolicy,
  nextSlotAfter,
  type OverlapPolicy,
  type ScheduleTiming,
} from "../../base/schedule-timing.ts";
import { RefusedError } from "../errors.ts";
import type { CommandReceiptInput } from "../host-commands.ts";
import { type StateStore } from "../store.ts";
import { execute } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { encodeValue } from "../values.ts";
import {
  findSchedule,
  recordReceipt,
  scheduleById,
  type ScheduleRow,
  scheduleView,
} from "./schedule-records.ts";

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
  /** Of `credentialNames`, those named with `--env`: the runs' workers and nodes get them too. */
  runSecretNames: readonly string[];
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
      runNames: JSON.stringify([...input.runSecretNames].sort()),
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
          "run_secret_names_json = :runNames, pi_command = :piCommand, pi_args_json = :piArgs, origin = :origin, " +
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
          "run_secret_names_json, pi_command, pi_args_json, origin, paused, next_fire_at, revision, created_at, " +
          "updated_at) VALUES (:scheduleId, :name, :workflow, :workflowName, :workflowRef, " +
          ":projectPath, :cron, :timeZone, :everyMs, :anchorAt, :overlap, :catchUp, :input, " +
          ":inputHash, :source, " +
          ":digest, :env, :names, :runNames, :piCommand, :piArgs, :origin, 0, :next, 1, :now, :now)",
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
  runNames: string;
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
    f.runNames,
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
    runNames: row.run_secret_names_json,
    piCommand: row.pi_command,
    piArgs: row.pi_args_json,
    digest: row.definition_digest,
  });
}

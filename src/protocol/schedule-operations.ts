/**
 * Payloads and receipts of the `schedule.*` operations. A schedule is a durable record, named
 * uniquely per user, that starts a headless run of one workflow at each slot of its timing
 * (schedule-timing.ts): a cron expression in a time zone or a fixed interval. Its runs are
 * ordinary runs; a schedule adds when they start, what happens when the previous one is still
 * active (`overlap`) and which slots a host that was down makes up for (`catchUp`).
 */
import * as v from "valibot";
import { ClientJsonValueSchema } from "./json-depth.ts";
import { JsonValueSchema } from "./run-facts.ts";
import { PiLaunchSchema } from "./pi-launch.ts";
import { RunEnvironmentSchema } from "./run-environment.ts";
import {
  AbsolutePathSchema,
  CountSchema,
  looseObject,
  OpaqueIdSchema,
  PositiveIntegerSchema,
  strictObject,
  TimestampSchema,
} from "./fields.ts";
import {
  CATCH_UP_POLICIES,
  cronProblem,
  OVERLAP_POLICIES,
  parseEvery,
  timeZoneProblem,
} from "../base/schedule-timing.ts";

export const ScheduleNameSchema = v.pipe(
  v.string(),
  v.regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
    "Invalid schedule name: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
  ),
);

export const OverlapSchema = v.picklist(
  OVERLAP_POLICIES,
  `Invalid overlap policy: expected one of ${OVERLAP_POLICIES.join(", ")}`,
);
export const CatchUpSchema = v.picklist(
  CATCH_UP_POLICIES,
  `Invalid catch-up policy: expected one of ${CATCH_UP_POLICIES.join(", ")}`,
);

const CronTextSchema = v.pipe(v.string(), v.maxLength(200));
const EveryTextSchema = v.pipe(
  v.string(),
  v.maxLength(40),
  v.check((text) => parseEvery(text).ok, (issue) => {
    const parsed = parseEvery(String(issue.input));
    return parsed.ok ? "Invalid interval" : parsed.error;
  }),
);
const TimeZoneSchema = v.pipe(
  v.string(),
  v.check((zone) => timeZoneProblem(zone) === null, (issue) => {
    return timeZoneProblem(String(issue.input)) ?? "Invalid time zone";
  }),
);

/**
 * The timing and policies of a schedule, as a client or a workflow file declares them: exactly
 * one of `cron` and `every`; `timeZone` only with `cron` (the client's own zone when absent).
 */
export const ScheduleTimingEntries = {
  /** A 5-field cron expression: minute hour day-of-month month day-of-week. */
  cron: v.optional(CronTextSchema),
  /** An interval such as `30m`, `1h30m` or `10s` (at least 1s). */
  every: v.optional(EveryTextSchema),
  /** IANA zone whose wall time the cron follows. */
  timeZone: v.optional(TimeZoneSchema),
  /** What a slot does while the schedule's previous run is active (default `skip`). */
  overlap: v.optional(OverlapSchema),
  /** Which slots missed while no host ran are made up for (default `none`). */
  catchUp: v.optional(CatchUpSchema),
};

type TimingFields = {
  cron?: string | undefined;
  every?: string | undefined;
  timeZone?: string | undefined;
};

/** A schedule's timing and policies as declared (a command's payload, a workflow file). */
export interface ScheduleTimingFields extends TimingFields {
  overlap?: string | undefined;
  catchUp?: string | undefined;
}

/** The one problem with a timing's combination of fields, or null. */
export function timingProblem(spec: TimingFields): string | null {
  if (spec.cron === undefined && spec.every === undefined) {
    return "A schedule needs a timing: give a cron expression or an interval (every)";
  }
  if (spec.cron !== undefined && spec.every !== undefined) {
    return "A schedule has one timing: give either a cron expression or an interval, not both";
  }
  if (spec.every !== undefined && spec.timeZone !== undefined) {
    return "A time zone applies only to a cron expression: an interval follows real time";
  }
  if (spec.cron !== undefined) return cronProblem(spec.cron, spec.timeZone ?? "UTC");
  return null;
}

/** The combination rule as JSON Schema states it (the cron text itself only the host checks). */
const TIMING_JSON_SCHEMA = {
  oneOf: [{ required: ["cron"] }, { required: ["every"] }],
  not: { required: ["every", "timeZone"] },
};

function checkTiming<T extends TimingFields>() {
  return Object.assign(
    v.check<T, v.ErrorMessage<v.CheckIssue<T>>>(
      (spec) => timingProblem(spec) === null,
      (issue) => timingProblem(issue.input as T) ?? "Invalid schedule timing",
    ),
    { jsonSchema: TIMING_JSON_SCHEMA },
  );
}

/**
 * The `schedule` a workflow file declares in `defineWorkflow` (read only by `schedule apply`):
 * the timing and policies, the input of its runs, and its name (the workflow's name if absent).
 */
export const ScheduleDeclarationSchema = v.pipe(
  strictObject({
    name: v.optional(ScheduleNameSchema),
    ...ScheduleTimingEntries,
    input: v.optional(JsonValueSchema),
  }),
  checkTiming(),
);
export type ScheduleDeclaration = v.InferOutput<typeof ScheduleDeclarationSchema>;

/** `schedule.add`: create a schedule, or with `replace` change the one of that name. */
export const ScheduleAddPayloadSchema = v.pipe(
  strictObject({
    name: ScheduleNameSchema,
    /** Workflow name, `builtin:<id>`, or a path (absolute, or relative to `cwd`). */
    workflow: v.pipe(v.string(), v.minLength(1), v.maxLength(4096)),
    /** The project directory its runs execute in. */
    cwd: AbsolutePathSchema,
    ...ScheduleTimingEntries,
    /** The input of every run it starts (default null). */
    input: v.optional(ClientJsonValueSchema),
    /** The run environment of its runs (recorded privately, like a run's). */
    env: v.optional(RunEnvironmentSchema),
    /** Provider credentials for its runs' Pi, held in the host's memory only. */
    credentials: v.optional(RunEnvironmentSchema),
    /** How its runs start Pi for agent steps. */
    pi: v.optional(PiLaunchSchema),
    /** Replace an existing schedule of this name instead of refusing. */
    replace: v.optional(v.boolean()),
  }),
  checkTiming(),
);
export type ScheduleAddPayload = v.InferOutput<typeof ScheduleAddPayloadSchema>;

/**
 * `schedule.apply`: the schedule a workflow file declares (`schedule` in `defineWorkflow`), added
 * or updated under its declared name. Reading a file never schedules it; only this does.
 */
export const ScheduleApplyPayloadSchema = strictObject({
  workflow: v.pipe(v.string(), v.minLength(1), v.maxLength(4096)),
  cwd: AbsolutePathSchema,
  env: v.optional(RunEnvironmentSchema),
  credentials: v.optional(RunEnvironmentSchema),
  pi: v.optional(PiLaunchSchema),
  /** The client's zone, used when the file's cron names none. */
  defaultTimeZone: v.optional(TimeZoneSchema),
});

export const ScheduleRefPayloadSchema = strictObject({ name: ScheduleNameSchema });
export const ScheduleResumePayloadSchema = strictObject({
  name: ScheduleNameSchema,
  credentials: v.optional(RunEnvironmentSchema),
});
export const ScheduleShowPayloadSchema = strictObject({
  name: ScheduleNameSchema,
  /** How many of the latest firings to include (default 10). */
  firings: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0), v.maxValue(100))),
});
export const ScheduleListPayloadSchema = v.optional(strictObject({}), {});

export const FIRING_STATES = ["pending", "started", "skipped", "failed"] as const;

/** One firing: a slot the schedule acted on. */
export const ScheduleFiringViewSchema = looseObject({
  slotAt: TimestampSchema,
  state: v.picklist(FIRING_STATES),
  /** The run it started (also a failed run that records a load error). */
  runId: v.optional(OpaqueIdSchema),
  /** Why it started nothing (`overlap`), or why it failed. */
  reason: v.optional(v.string()),
  /** A started run waits for the schedule's previous run (`queue` overlap). */
  held: v.optional(v.boolean()),
});
export type ScheduleFiringView = v.InferOutput<typeof ScheduleFiringViewSchema>;

/** A schedule as clients see it: no environment, no credentials, no input. */
export const ScheduleViewSchema = looseObject({
  name: ScheduleNameSchema,
  workflow: v.string(),
  workflowName: v.string(),
  cron: v.optional(v.string()),
  timeZone: v.optional(v.string()),
  every: v.optional(v.string()),
  overlap: OverlapSchema,
  catchUp: CatchUpSchema,
  state: v.picklist(["enabled", "paused"]),
  /** Why it paused itself (its workflow kept failing to load), or null. */
  pausedReason: v.nullable(v.string()),
  nextFireAt: v.nullable(TimestampSchema),
  lastFiredAt: v.nullable(TimestampSchema),
  /** Slots missed while no host ran that its catch-up policy did not start. */
  missedSlots: CountSchema,
  /** Firings in a row whose workflow did not load (3 pause the schedule). */
  loadFailures: CountSchema,
  revision: PositiveIntegerSchema,
  createdAt: TimestampSchema,
});
export type ScheduleView = v.InferOutput<typeof ScheduleViewSchema>;

export const ScheduleReceiptSchema = looseObject({
  schedule: ScheduleViewSchema,
  /** `schedule.add`/`schedule.apply`: whether it was new, or changed an existing one. */
  created: v.optional(v.boolean()),
  changed: v.optional(v.boolean()),
});
export const ScheduleShowReceiptSchema = looseObject({
  schedule: ScheduleViewSchema,
  /** The latest firings, newest first. */
  firings: v.array(ScheduleFiringViewSchema),
});
export const ScheduleListReceiptSchema = looseObject({
  schedules: v.array(ScheduleViewSchema),
});
export const ScheduleRemoveReceiptSchema = looseObject({
  name: ScheduleNameSchema,
  removed: v.boolean(),
});

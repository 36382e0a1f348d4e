/**
 * `host.prune`: one retention pass on demand (docs/state.md "Retention"). The host is the only
 * writer, so the CLI asks it; the answer counts what went (or would go, with `dryRun`) and the
 * bytes, and is stored as the command's receipt like any other change.
 */
import * as v from "valibot";
import { CountSchema, looseObject, strictObject, TimestampSchema } from "./fields.ts";

/** A century: a larger period keeps everything anyway. */
export const MAX_KEEP_DAYS = 36_500;

/** Days an ended run is kept whole (0: every ended run is due, young receipts still keep it). */
export const KeepDaysSchema = v.pipe(
  v.number(),
  v.safeInteger("keepDays must be a whole number of days"),
  v.minValue(0, "keepDays must be 0 or more"),
  v.maxValue(MAX_KEEP_DAYS, `keepDays must be at most ${MAX_KEEP_DAYS}`),
);

export const HostPrunePayloadSchema = v.optional(
  strictObject({
    /** Default: `retention.days` of config.json, else 30. */
    keepDays: v.optional(KeepDaysSchema),
    dryRun: v.optional(v.boolean()),
  }),
  {},
);

/**
 * The `rows` key of the client receipts of ended runs (`host_commands` counts those of no run):
 * most go just before their run is marked, and the run may then be kept (referenced meanwhile),
 * so they are not called receipts of no run.
 */
export const ENDED_RUN_RECEIPTS = "host_commands_of_ended_runs";

export const HostPruneReceiptSchema = looseObject({
  dryRun: v.boolean(),
  keepDays: KeepDaysSchema,
  /** Ended runs that ended before this time were due. */
  cutoff: v.number(),
  runs: CountSchema,
  /** Rows per table (and `ENDED_RUN_RECEIPTS`). */
  rows: v.record(v.string(), CountSchema),
  compactedRuns: CountSchema,
  trimmedDeltas: CountSchema,
  /** Bytes the deleted rows held (an estimate in a dry run). */
  bytes: CountSchema,
  fileBytesBefore: CountSchema,
  fileBytesAfter: CountSchema,
  transactions: CountSchema,
  /** The longest write transaction of the pass (ms), and per phase. */
  longestLockMs: v.number(),
  longestLockMsByPhase: v.record(v.string(), v.number()),
  finishedAt: TimestampSchema,
});
export type HostPruneReceipt = v.InferOutput<typeof HostPruneReceiptSchema>;

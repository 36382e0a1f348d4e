/**
 * `run.find`: the runs whose id starts with a prefix, so people can type `a1b2` for
 * `run-a1b2c3d4-…` as they abbreviate a git commit. A read: nothing changes, no receipt is
 * stored. The answer carries at most `limit` runs (outputs left out) and whether more match.
 */
import * as v from "valibot";
import { looseObject, OpaqueIdSchema, strictObject } from "./fields.ts";
import { RunSummarySchema } from "./run-operations.ts";

export const RunFindPayloadSchema = strictObject({
  /** The start of a run id (printable ASCII, as ids are). */
  prefix: OpaqueIdSchema,
  limit: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1), v.maxValue(20)), 5),
});

export const RunFindReceiptSchema = looseObject({
  /** In id order; outputs are left out. */
  runs: v.array(RunSummarySchema),
  /** More runs match than `runs` holds. */
  more: v.boolean(),
});

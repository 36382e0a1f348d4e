/**
 * `run.rerun`: a new run forked from another at one of its node visits (docs/when-a-run-fails.md).
 * The envelope's `runId` names the parent. The fork adopts the parent's committed history before
 * that visit and runs on from it, on the workflow file as it is now (`source: current`) or as the
 * parent recorded it (`recorded`). The fork keeps the parent's input unless `input` is given, and
 * the parent's execution mode: an interactive parent's fork runs in the asking session
 * (`originSessionId`), a headless one with the parent's Pi command and model arguments unless
 * `pi` is given.
 */
import * as v from "valibot";
import { PiLaunchSchema } from "./pi-launch.ts";
import { ClientJsonValueSchema } from "./json-depth.ts";
import { RunEnvironmentSchema } from "./run-environment.ts";
import {
  CountSchema,
  looseObject,
  OpaqueIdSchema,
  PositiveIntegerSchema,
  strictObject,
} from "./fields.ts";
import { RunSummarySchema } from "./run-operations.ts";

export const RERUN_SOURCES = ["current", "recorded"] as const;
export type RerunSource = (typeof RERUN_SOURCES)[number];

const NodeIdSchema = v.pipe(v.string(), v.minLength(1), v.maxLength(1000));

const RunRerunFieldsSchema = strictObject({
  /** The node to rerun (a flattened id, `mount/child` inside includes). Default: where the
   * parent stopped (its failed node, or the one it is parked at). */
  from: v.optional(NodeIdSchema),
  /** Which visit of `from` (1-based); default the latest. */
  visit: v.optional(PositiveIntegerSchema),
  /** Default: `current` when the workflow file changed since the parent started, else the
   * recorded source (the same file). `recorded` on a changed file is refused. */
  source: v.optional(v.picklist(RERUN_SOURCES)),
  /** `retry`: the parent must have failed or timed out in a node; that node is rerun on the
   * current source (`from`, `visit` and `source` must be absent). */
  retry: v.optional(v.boolean()),
  /** New raw input (before the workflow's normalizer); absent: the parent's input. */
  input: v.optional(ClientJsonValueSchema),
  /** The asking Pi session: required to rerun an interactive run (the fork runs there). */
  originSessionId: v.optional(OpaqueIdSchema),
  /** The run environment for the fork (as in run.start); absent: the host's allowlisted base. */
  env: v.optional(RunEnvironmentSchema),
  /** Provider credentials for a headless fork's Pi children (memory only, as in run.start). */
  credentials: v.optional(RunEnvironmentSchema),
  /** New Pi command and model arguments for a headless fork; absent: the parent's. */
  pi: v.optional(PiLaunchSchema),
});

export const RunRerunPayloadSchema = v.optional(
  v.pipe(
    RunRerunFieldsSchema,
    v.check(
      (p) => !p.retry || (p.from === undefined && p.visit === undefined && p.source === undefined),
      "Invalid run.rerun: a retry reruns the failed node on the current source; it takes no from, visit or source",
    ),
  ),
  {},
);
export type RunRerunPayload = v.InferOutput<typeof RunRerunFieldsSchema>;

/** The receipt: the fork as committed, the visit it reran from and what it adopted. */
export const RunRerunReceiptSchema = looseObject({
  run: RunSummarySchema,
  from: looseObject({
    runId: OpaqueIdSchema,
    nodeId: v.string(),
    attemptId: OpaqueIdSchema,
    visit: PositiveIntegerSchema,
  }),
  /** How many of the parent's attempts the fork adopted (not run again). */
  adoptedAttempts: CountSchema,
  source: v.picklist(RERUN_SOURCES),
});
export type RunRerunReceipt = v.InferOutput<typeof RunRerunReceiptSchema>;

/**
 * The shape of a controller resource as clients, controller workers and the host exchange it:
 * `{metadata, spec, status}`. `resourceVersion` grows with every write and is the compare-and-set
 * token of status writes; `generation` grows only when the spec changes. The host stores these
 * values as canonical JSON; this file is the one definition of their shape and bounds.
 */
import * as v from "valibot";
import type { JsonValue } from "./canonical-json.ts";
import { JsonValueSchema } from "./run-facts.ts";
import {
  CountSchema,
  ErrorInfoSchema,
  OpaqueIdSchema,
  PositiveIntegerSchema,
  strictObject,
} from "./fields.ts";

/** Controller names: lowercase letters, digits and `-`, starting with a letter. */
export const CONTROLLER_NAME_PATTERN = /^[a-z][a-z0-9-]{0,62}$/;
export const ControllerNameSchema = v.pipe(
  v.string(),
  v.regex(
    CONTROLLER_NAME_PATTERN,
    "Invalid controller name: expected a lowercase letter, then up to 62 of [a-z0-9-]",
  ),
);

/** Resource keys: 1-256 printable characters without control characters. */
export const ResourceKeySchema = v.pipe(
  v.string(),
  v.minLength(1, "Invalid resource key: it is empty"),
  v.maxLength(256, "Invalid resource key: longer than 256 characters"),
  v.check(
    (key) => ![...key].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f),
    "Invalid resource key: contains a control character",
  ),
);

export const CONDITION_STATUSES = [true, false, "unknown"] as const;
export type ConditionStatus = (typeof CONDITION_STATUSES)[number];

const ConditionTextSchema = v.pipe(v.string(), v.minLength(1), v.maxLength(128));

export const ConditionSchema = strictObject({
  type: ConditionTextSchema,
  status: v.union([v.boolean(), v.literal("unknown")]),
  reason: ConditionTextSchema,
  message: v.optional(v.pipe(v.string(), v.maxLength(4096))),
  observedGeneration: CountSchema,
  /** ISO 8601 time of the last status change of this condition. */
  lastTransitionTime: v.pipe(v.string(), v.isoTimestamp()),
});
export type Condition = v.InferOutput<typeof ConditionSchema>;

export const CHILD_WORKFLOW_STATES = [
  "pending",
  "running",
  "waiting",
  "succeeded",
  "failed",
  "interrupted",
] as const;
export type ChildWorkflowState = (typeof CHILD_WORKFLOW_STATES)[number];

/** What `ctx.workflows.ensure` answers and `status.workflowRun` may keep. */
export const CHILD_WORKFLOW_REF_ENTRIES = {
  requestId: OpaqueIdSchema,
  runId: v.optional(OpaqueIdSchema),
  state: v.picklist(CHILD_WORKFLOW_STATES),
  attempt: PositiveIntegerSchema,
  /** Why a `waiting` child cannot go on by itself (`unsupportedInput`, `effectAmbiguous`, ...). */
  blockedReason: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(64))),
  /** One line on what the waiting child needs (e.g. an approved session binding). */
  blockedDetail: v.optional(v.pipe(v.string(), v.maxLength(1024))),
  /** A `failed` child's error (the workflow could not be resolved, or the run failed). */
  error: v.optional(ErrorInfoSchema),
};
export const ChildWorkflowRefSchema = strictObject(CHILD_WORKFLOW_REF_ENTRIES);
export type ChildWorkflowRef = v.InferOutput<typeof ChildWorkflowRefSchema>;

export const MAX_CONDITIONS = 64;
export const MAX_FINALIZERS = 32;

export const FinalizersSchema = v.pipe(
  v.array(v.pipe(v.string(), v.minLength(1), v.maxLength(256))),
  v.maxLength(MAX_FINALIZERS),
  v.check((list) => new Set(list).size === list.length, "Invalid finalizers: duplicates"),
);

/**
 * A resource status whose `controllerStatus` is checked by `json`: JsonValueSchema (the
 * reference), or controller-frames.ts's check for values straight from JSON.parse.
 */
export function resourceStatusSchema(json: v.GenericSchema<JsonValue>) {
  return strictObject({
    observedGeneration: CountSchema,
    conditions: v.pipe(v.array(ConditionSchema), v.maxLength(MAX_CONDITIONS)),
    controllerStatus: json,
    workflowRun: v.optional(ChildWorkflowRefSchema),
  });
}

export const ResourceStatusSchema = resourceStatusSchema(JsonValueSchema);
export type ResourceStatus =
  & Omit<v.InferOutput<typeof ResourceStatusSchema>, "controllerStatus">
  & {
    controllerStatus: JsonValue;
  };

export const ResourceMetadataSchema = strictObject({
  uid: OpaqueIdSchema,
  controller: ControllerNameSchema,
  key: ResourceKeySchema,
  resourceVersion: PositiveIntegerSchema,
  generation: PositiveIntegerSchema,
  /** ISO 8601 time deletion was requested; absent while the resource is not being deleted. */
  deletionTimestamp: v.optional(v.pipe(v.string(), v.isoTimestamp())),
  finalizers: FinalizersSchema,
});
export type ResourceMetadata = v.InferOutput<typeof ResourceMetadataSchema>;

export const ControllerResourceSchema = strictObject({
  metadata: ResourceMetadataSchema,
  spec: JsonValueSchema,
  status: ResourceStatusSchema,
});
export interface ControllerResource {
  metadata: ResourceMetadata;
  spec: JsonValue;
  status: ResourceStatus;
}

/** The status every new resource starts with, around the controller's `initialStatus(spec)`. */
export function initialResourceStatus(controllerStatus: JsonValue): ResourceStatus {
  return { observedGeneration: 0, conditions: [], controllerStatus };
}

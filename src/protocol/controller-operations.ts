/**
 * Payloads and receipts of the `controller.*` operations. A controller is named within a project
 * (`cwd`); its resources by key. Controllers reconcile in supervised controller workers; the host
 * only records and schedules. A state-changing operation's envelope `expectedRevision` is a
 * compare-and-set on the resource's `resourceVersion` (0 for `controller.apply`: it must be new).
 */
import * as v from "valibot";
import { ClientJsonValueSchema } from "./json-depth.ts";
import { JsonValueSchema } from "./run-facts.ts";
import { PiLaunchSchema } from "./pi-launch.ts";
import {
  CHILD_WORKFLOW_REF_ENTRIES,
  ControllerNameSchema,
  ControllerResourceSchema,
  ResourceKeySchema,
} from "./controller-resource.ts";
import {
  AbsolutePathSchema,
  CountSchema,
  DigestSchema,
  ErrorInfoSchema,
  looseObject,
  OpaqueIdSchema,
  PositiveIntegerSchema,
  strictObject,
  TimestampSchema,
} from "./fields.ts";

export { ControllerNameSchema };

const ResourceRefEntries = {
  /** The project directory the controller belongs to. */
  cwd: AbsolutePathSchema,
  controller: ControllerNameSchema,
  key: ResourceKeySchema,
};

export const ControllerListPayloadSchema = strictObject({
  cwd: AbsolutePathSchema,
  controller: v.optional(ControllerNameSchema),
});
export const ControllerGetPayloadSchema = strictObject({
  ...ResourceRefEntries,
  /** How many of the latest events to include (default 20). */
  events: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0), v.maxValue(200))),
});

/** `controller.apply`: create or update a resource; the controller's source is resolved again. */
export const ControllerApplyPayloadSchema = strictObject({
  cwd: AbsolutePathSchema,
  /** A controller name (found by the discovery rules) or a path to its `.controller.ts` file. */
  controller: v.pipe(v.string(), v.minLength(1), v.maxLength(4096)),
  key: ResourceKeySchema,
  /** The resource spec (default null). */
  spec: v.optional(ClientJsonValueSchema),
  /** The exact source digest the caller expects; the host refuses when the resolved one differs. */
  sourceDigest: v.optional(DigestSchema),
  /**
   * The Pi command and model arguments the controller's headless child runs use for agent steps
   * (the CLI sends the Pi it finds); absent: the one an earlier apply declared stays.
   */
  pi: v.optional(PiLaunchSchema),
});

export const CONTROLLER_EFFECT_VERDICTS = ["applied", "notApplied"] as const;

/**
 * `controller.reconcile`, optionally with the operator's reviewed verdict on one of the
 * resource's `ambiguous` effects: `applied` (it happened; `receipt` is what later reconciles
 * adopt) or `notApplied` (it did not: the next `ensure` applies it). Then the resource is due.
 */
export const ControllerReconcilePayloadSchema = strictObject({
  ...ResourceRefEntries,
  resolveEffect: v.optional(v.pipe(
    strictObject({
      effectId: OpaqueIdSchema,
      verdict: v.picklist(CONTROLLER_EFFECT_VERDICTS),
      receipt: v.optional(ClientJsonValueSchema),
    }),
    v.check(
      (r) => r.receipt === undefined || r.verdict === "applied",
      "Invalid resolveEffect: a receipt goes only with the applied verdict",
    ),
  )),
});
export const ControllerDeletePayloadSchema = strictObject(ResourceRefEntries);

/**
 * `controller.bind`: the Pi session `sessionId` approves that the controller's interactive child
 * runs use it as their origin session (sent by that session's extension for `/controller bind`).
 */
export const ControllerBindPayloadSchema = strictObject({
  cwd: AbsolutePathSchema,
  controller: ControllerNameSchema,
  sessionId: OpaqueIdSchema,
});
/** `controller.unbind`: revokes the controller's approved session binding. */
export const ControllerUnbindPayloadSchema = strictObject({
  cwd: AbsolutePathSchema,
  controller: ControllerNameSchema,
});

/** A live approved session binding as clients see it (never the session id). */
export const SessionBindingViewSchema = looseObject({
  bindingId: OpaqueIdSchema,
  approvedAt: TimestampSchema,
});

export const ControllerBindReceiptSchema = looseObject({
  controller: ControllerNameSchema,
  bindingId: OpaqueIdSchema,
  approvedAt: TimestampSchema,
  /** A binding to another session was revoked by this approval. */
  replaced: v.boolean(),
  /** The session was already the approved one. */
  unchanged: v.boolean(),
});

export const ControllerUnbindReceiptSchema = looseObject({
  controller: ControllerNameSchema,
  bindingId: OpaqueIdSchema,
  revokedAt: TimestampSchema,
  /** Child runs started under the binding that go on in their session. */
  activeChildRuns: CountSchema,
});

export const ReconcileQueueViewSchema = looseObject({
  pending: v.boolean(),
  availableAt: TimestampSchema,
  reconciling: v.boolean(),
  consecutiveErrors: CountSchema,
  lastError: v.nullable(ErrorInfoSchema),
});

export const ControllerSummarySchema = looseObject({
  name: ControllerNameSchema,
  sourceDigest: DigestSchema,
  blockedReason: v.nullable(v.string()),
  blockedDetail: v.nullable(v.string()),
  resources: CountSchema,
  sessionBinding: v.nullable(SessionBindingViewSchema),
});

export const ResourceSummarySchema = looseObject({
  controller: ControllerNameSchema,
  key: ResourceKeySchema,
  uid: v.string(),
  resourceVersion: PositiveIntegerSchema,
  generation: PositiveIntegerSchema,
  observedGeneration: CountSchema,
  deleting: v.boolean(),
  queue: v.nullable(ReconcileQueueViewSchema),
});

export const ControllerListReceiptSchema = looseObject({
  controllers: v.array(ControllerSummarySchema),
  resources: v.array(ResourceSummarySchema),
});

export const ControllerGetReceiptSchema = looseObject({
  resource: ControllerResourceSchema,
  queue: v.nullable(ReconcileQueueViewSchema),
  controller: ControllerSummarySchema,
  effects: v.array(looseObject({ effectId: v.string(), kind: v.string(), state: v.string() })),
  workflows: v.array(looseObject({ ...CHILD_WORKFLOW_REF_ENTRIES, requestKey: ResourceKeySchema })),
  events: v.array(looseObject({
    type: v.string(),
    resourceVersion: PositiveIntegerSchema,
    payload: JsonValueSchema,
    at: TimestampSchema,
  })),
});

export const ControllerApplyReceiptSchema = looseObject({
  resource: ControllerResourceSchema,
  created: v.boolean(),
  changed: v.boolean(),
  repinned: v.boolean(),
  sourceDigest: DigestSchema,
});

export const ControllerReceiptSchema = looseObject({
  resource: ControllerResourceSchema,
  /** `controller.reconcile` with `resolveEffect`: the effect's new state. */
  resolvedEffect: v.optional(looseObject({ effectId: v.string(), state: v.string() })),
});

export const ControllerDeleteReceiptSchema = looseObject({
  resource: ControllerResourceSchema,
  removed: v.boolean(),
});

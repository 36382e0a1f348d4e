/**
 * The private channel of a controller worker (`pi-workflows worker --controller`), fd 3, the same
 * bounded NDJSON framing as run workers. One worker serves one controller at its pinned source
 * and runs several reconciles at once:
 *
 *   host -> worker   the launch envelope (first frame), then pushes: `reconcile.assign` (a
 *                    claimed resource and its deadline), `reconcile.abort` (deadline, claim lost)
 *   worker -> host   proposals, each answered by one worker reply with the same `messageId`:
 *                    `controller.ready`, `controller.blocked`, and per reconcile `effect.reserve`,
 *                    `effect.settle`, `workflow.ensure`, `reconcile.finished`
 *
 * No secret travels: the host keeps every claim and fences each proposal by worker epoch and
 * reconcile id (`<uid>:<generation>`).
 */
import * as v from "valibot";
import type { JsonValue } from "./canonical-json.ts";
import {
  ControllerNameSchema,
  ControllerResourceSchema,
  FinalizersSchema,
  ResourceKeySchema,
  type ResourceStatus,
  ResourceStatusSchema,
  resourceStatusSchema,
} from "./controller-resource.ts";
import {
  AbsolutePathSchema,
  DigestSchema,
  ErrorInfoSchema,
  nonArray,
  OpaqueIdSchema,
  ShortTextSchema,
  strictObject,
  TimestampSchema,
} from "./fields.ts";
import { DecodedJsonSchema, JsonValueSchema } from "./run-facts.ts";
import { BudgetSchema } from "./budget.ts";
import { describeIssues, parseWith, type SchemaResult } from "./schema-issues.ts";
import { WorkflowSourceSchema } from "./worker-launch.ts";

export const CONTROLLER_LAUNCH_SCHEMA = "pi-workflows.controller-launch.v1";
export const CONTROLLER_PUSH_SCHEMA = "pi-workflows.controller-push.v1";
export const CONTROLLER_PROTOCOL_VERSION = 1;

export const ControllerLaunchSchema = strictObject({
  schema: v.literal(CONTROLLER_LAUNCH_SCHEMA),
  workerEpoch: OpaqueIdSchema,
  controllerId: OpaqueIdSchema,
  controllerName: ControllerNameSchema,
  projectPath: AbsolutePathSchema,
  /** The pinned source identity, verified by hashing before anything is loaded. */
  source: WorkflowSourceSchema,
  sourceDigest: DigestSchema,
  protocolVersion: v.literal(CONTROLLER_PROTOCOL_VERSION),
});
export type ControllerLaunch = v.InferOutput<typeof ControllerLaunchSchema>;

export const ControllerPushSchema = nonArray(v.variant("kind", [
  v.strictObject({
    schema: v.literal(CONTROLLER_PUSH_SCHEMA),
    kind: v.literal("reconcile.assign"),
    reconcileId: OpaqueIdSchema,
    resource: ControllerResourceSchema,
    /** Epoch ms: the host requeues the resource then, whatever the code still does. */
    deadlineAt: TimestampSchema,
  }),
  v.strictObject({
    schema: v.literal(CONTROLLER_PUSH_SCHEMA),
    kind: v.literal("reconcile.abort"),
    reconcileId: OpaqueIdSchema,
    reason: v.picklist(["timedOut", "claimLost", "shutdown"]),
  }),
]));
export type ControllerPush = v.InferOutput<typeof ControllerPushSchema>;

function reconcileOutcomeSchema(json: v.GenericSchema<JsonValue>) {
  return nonArray(v.variant("kind", [
    v.strictObject({
      kind: v.picklist(["settled", "requeue"]),
      // The reference keeps the one ResourceStatusSchema (published once as JSON Schema).
      status: json === JsonValueSchema ? ResourceStatusSchema : resourceStatusSchema(json),
      finalizers: v.optional(FinalizersSchema),
      afterMs: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1))),
    }),
    v.strictObject({ kind: v.literal("error"), error: ErrorInfoSchema }),
  ]));
}

export const ReconcileOutcomeSchema = reconcileOutcomeSchema(JsonValueSchema);

/** What a reconcile ended with, as the worker reports it and the host commits it. */
export type ReconcileOutcome =
  | {
    kind: "settled" | "requeue";
    /** The full new status: the code's patch applied to the status the reconcile read. */
    status: ResourceStatus;
    /** Replaces the finalizers when given. */
    finalizers?: string[];
    /** For `requeue`: wait this long first (requeueAfter). */
    afterMs?: number;
  }
  | { kind: "error"; error: { code: string; message: string } };

export const CONTROLLER_MESSAGE_KINDS = [
  "controller.ready",
  "controller.blocked",
  "effect.reserve",
  "effect.settle",
  "workflow.ensure",
  "reconcile.finished",
] as const;
export type ControllerMessageKind = (typeof CONTROLLER_MESSAGE_KINDS)[number];

/** Kinds that act for one reconcile: the header must name it. */
export const RECONCILE_KINDS: ReadonlySet<ControllerMessageKind> = new Set<ControllerMessageKind>([
  "effect.reserve",
  "effect.settle",
  "workflow.ensure",
  "reconcile.finished",
]);

/**
 * The payload schema of each kind, JSON-typed fields checked by `json` (see
 * resourceStatusSchema): the reference `CONTROLLER_PAYLOAD_SCHEMAS`, published as JSON Schema,
 * and the host's frame variant (controller-frames.ts).
 */
export function controllerPayloadSchemas(json: v.GenericSchema<JsonValue>) {
  return {
    "controller.ready": strictObject({ pid: v.pipe(v.number(), v.safeInteger(), v.minValue(1)) }),
    "controller.blocked": strictObject({
      reason: v.picklist(["sourceChanged", "loadFailed"]),
      detail: ShortTextSchema,
    }),
    "effect.reserve": strictObject({
      kind: v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/)),
      key: v.pipe(v.string(), v.minLength(1), v.maxLength(1000)),
      requestFingerprint: DigestSchema,
      contract: v.picklist(["idempotencyKey", "readBack", "nonResumable"]),
    }),
    "effect.settle": strictObject({
      effectId: OpaqueIdSchema,
      outcome: v.picklist(["applied", "rejected"]),
      receipt: v.optional(json),
      error: v.optional(ErrorInfoSchema),
    }),
    "workflow.ensure": strictObject({
      requestKey: ResourceKeySchema,
      workflow: v.pipe(v.string(), v.minLength(1), v.maxLength(4096)),
      input: json,
      /** Run it in the controller's approved session (spec "Controllers"). */
      interactive: v.optional(v.boolean()),
      /** The controller's budget: a total over all its child runs (state/budget-stop.ts). */
      budget: v.optional(BudgetSchema),
    }),
    "reconcile.finished": strictObject({
      outcome: reconcileOutcomeSchema(json),
      /**
       * The settle of the effect applied last, when the reconcile returned right after its
       * `ensure` answered: the host commits both in one transaction (one commit less).
       */
      settle: v.optional(strictObject({
        effectId: OpaqueIdSchema,
        outcome: v.literal("applied"),
        receipt: v.optional(json),
      })),
    }),
  } as const satisfies Record<ControllerMessageKind, v.GenericSchema<unknown, unknown>>;
}

export const CONTROLLER_PAYLOAD_SCHEMAS = controllerPayloadSchemas(JsonValueSchema);

export type ControllerPayload<K extends ControllerMessageKind> = v.InferOutput<
  (typeof CONTROLLER_PAYLOAD_SCHEMAS)[K]
>;

export const ControllerHeaderSchema = strictObject({
  schema: v.literal(CONTROLLER_LAUNCH_SCHEMA),
  kind: v.picklist(CONTROLLER_MESSAGE_KINDS, "Invalid kind: not a controller message kind"),
  messageId: OpaqueIdSchema,
  workerEpoch: OpaqueIdSchema,
  reconcileId: v.optional(OpaqueIdSchema),
  payload: v.unknown(),
});
export type ControllerMessageHeader = Omit<v.InferOutput<typeof ControllerHeaderSchema>, "payload">;

export type ControllerMessage = {
  [K in ControllerMessageKind]: ControllerMessageHeader & {
    kind: K;
    payload: ControllerPayload<K>;
  };
}[ControllerMessageKind];

/** Header first (fence: the worker epoch), then the payload of its kind. */
export function parseControllerMessage(
  value: unknown,
  payloads: Record<ControllerMessageKind, v.GenericSchema<unknown, unknown>> =
    CONTROLLER_PAYLOAD_SCHEMAS,
): SchemaResult<ControllerMessage> {
  const header = v.safeParse(ControllerHeaderSchema, value);
  if (!header.success) return { ok: false, error: describeIssues(header.issues, "message") };
  const { kind, reconcileId } = header.output;
  if (RECONCILE_KINDS.has(kind) && reconcileId === undefined) {
    return { ok: false, error: `message.reconcileId: ${kind} needs the reconcile id` };
  }
  const schema = payloads[kind];
  const payload = v.safeParse(schema, header.output.payload);
  if (!payload.success) return { ok: false, error: describeIssues(payload.issues, "payload") };
  return { ok: true, value: { ...header.output, payload: payload.output } as ControllerMessage };
}

const FRAME_PAYLOAD_SCHEMAS = controllerPayloadSchemas(DecodedJsonSchema);

/**
 * `parseControllerMessage` for a frame the host read (JSON.parse output): the same schemas but
 * JSON-typed fields are not walked again. test/protocol/controller-frames.test.ts holds both to
 * the same verdicts and outputs on generated and mutated frames. (One difference: the
 * reference's record drops own keys named `__proto__` from its output; this keeps the value as
 * sent.)
 */
export function parseControllerFrame(value: unknown): SchemaResult<ControllerMessage> {
  return parseControllerMessage(value, FRAME_PAYLOAD_SCHEMAS);
}

export function parseControllerLaunch(value: unknown): SchemaResult<ControllerLaunch> {
  return parseWith(ControllerLaunchSchema, value, "launch");
}

export function parseControllerPush(value: unknown): SchemaResult<ControllerPush> {
  return parseWith(ControllerPushSchema, value, "push");
}

/** What `effect.reserve` answers (the reply's `result`). */
export const EffectReservationSchema = nonArray(v.variant("state", [
  v.strictObject({ effectId: OpaqueIdSchema, state: v.literal("reserved") }),
  v.strictObject({
    effectId: OpaqueIdSchema,
    state: v.picklist(["applied", "rejected"]),
    receipt: v.nullable(JsonValueSchema),
  }),
  v.strictObject({ effectId: OpaqueIdSchema, state: v.picklist(["ambiguous", "cancelled"]) }),
]));

/** Reconcile ids name the resource and the claim generation: `<uid>:<generation>`. */
export function reconcileIdOf(uid: string, generation: number): string {
  return `${uid}:${generation}`;
}

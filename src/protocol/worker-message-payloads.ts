/**
 * Per-kind payloads of the sixteen worker -> host messages. The header (schema, ids, fence) is in
 * worker-messages.ts; the host reads a payload only after the header passed its fence check.
 */
import { AnswerSchemaSchema } from "./answer-schema.ts";
import * as v from "valibot";
import { FactErrorSchema, JsonValueSchema, NODE_EFFECTS } from "./run-facts.ts";
import { StepUsageSchema } from "./step-usage.ts";
import { SubmissionTallySchema } from "./submissions.ts";
import {
  MAX_PRESENTATION_PROMPT_CHARS,
  WaitingPresentationSchema,
} from "./waiting-presentation.ts";
import {
  DigestSchema,
  nonArray,
  OpaqueIdSchema,
  ShortTextSchema,
  strictObject,
  TimestampSchema,
} from "./fields.ts";

const NodeIdSchema = v.pipe(v.string(), v.minLength(1), v.maxLength(1000));
const PidSchema = v.pipe(v.number(), v.safeInteger(), v.minValue(1));

export const WORKER_MESSAGE_KINDS = [
  "worker.ready",
  "node.started",
  "node.update",
  "node.finished",
  "node.failed",
  "run.parked",
  "run.finished",
  "interaction.requested",
  "interaction.accepted",
  "interaction.rejected",
  "notification.requested",
  "presentation.requested",
  "effect.reserve",
  "effect.settle",
  "worker.progress",
  "worker.exiting",
] as const;
export type WorkerMessageKind = (typeof WORKER_MESSAGE_KINDS)[number];

/** Kinds about one node attempt: the header must carry `attemptId`. */
export const ATTEMPT_KINDS: ReadonlySet<WorkerMessageKind> = new Set<WorkerMessageKind>([
  "node.started",
  "node.update",
  "node.finished",
  "node.failed",
  "interaction.requested",
  "interaction.accepted",
  "interaction.rejected",
  "notification.requested",
  "effect.reserve",
  "effect.settle",
]);

/** Why a run stopped at a durable boundary without finishing. */
export const PARK_REASONS = [
  "workflowSourceChanged",
  "checkpoint",
  "humanDecision",
  "interaction",
  "unsupportedInput",
  "effectAmbiguous",
  "budgetExceeded",
] as const;
export type ParkReason = (typeof PARK_REASONS)[number];

export const INTERACTION_KINDS = [
  "agent",
  "assistantMessage",
  "checkpoint",
  "humanDecision",
] as const;

/** `progress` while a run goes on; `final` is a notify node's closing message. */
export const NOTIFICATION_KINDS = ["progress", "final"] as const;

export const EFFECT_CONTRACTS = ["idempotencyKey", "readBack", "nonResumable"] as const;
export const EFFECT_OUTCOMES = ["applied", "rejected", "cancelled", "ambiguous"] as const;

export const WORKER_EXIT_REASONS = [
  "finished",
  "parked",
  "claimLost",
  "signal",
  "sourceChanged",
  "error",
] as const;

export const WORKER_PAYLOAD_SCHEMAS = {
  "worker.ready": strictObject({ pid: PidSchema }),
  "node.started": strictObject({
    nodeId: NodeIdSchema,
    nodeKind: v.pipe(v.string(), v.minLength(1), v.maxLength(100)),
    effect: v.picklist(NODE_EFFECTS),
    /** Resolved wall-clock deadline (epoch ms) or null when the node has no timeout. */
    deadlineAt: v.nullable(TimestampSchema),
  }),
  "node.update": strictObject({
    type: v.pipe(v.string(), v.minLength(1), v.maxLength(100)),
    key: v.optional(v.pipe(v.string(), v.maxLength(1000))),
    data: JsonValueSchema,
  }),
  /** `usage`: a model step's whole usage, committed with its outcome. */
  "node.finished": strictObject({
    output: JsonValueSchema,
    usage: v.optional(StepUsageSchema),
    /** A model step's whole submissions tally, when its accepted submission was not yet sent. */
    submissions: v.optional(SubmissionTallySchema),
  }),
  "node.failed": strictObject({
    outcome: v.picklist(["failed", "timed_out", "cancelled"]),
    error: FactErrorSchema,
    usage: v.optional(StepUsageSchema),
    submissions: v.optional(SubmissionTallySchema),
  }),
  "run.parked": strictObject({
    reason: v.picklist(PARK_REASONS),
    kind: v.optional(v.pipe(v.string(), v.maxLength(100))),
    /** What the run waits for (checkpoint prompt and schema, decision options...). */
    request: v.optional(JsonValueSchema),
    /** A checkpoint's declared answer shape, checked by the host before an answer is recorded. */
    answerSchema: v.optional(AnswerSchemaSchema),
    detail: v.optional(ShortTextSchema),
    /**
     * An interactive run waiting at a checkpoint whose root declares a `presentationPrompt`: the
     * rendered prompt, or why it could not be rendered. The host owes the origin session one
     * presentation turn for this wait.
     */
    presentation: v.optional(WaitingPresentationSchema),
  }),
  "run.finished": nonArray(v.variant("state", [
    v.strictObject({ state: v.literal("completed"), output: JsonValueSchema }),
    v.strictObject({ state: v.literal("failed"), error: FactErrorSchema }),
    v.strictObject({ state: v.literal("timed_out"), error: FactErrorSchema }),
  ])),
  "interaction.requested": strictObject({
    nodeId: NodeIdSchema,
    requestKind: v.picklist(INTERACTION_KINDS),
    /** The step contract: message, tool schema, allowed actions. Hashed by the host. */
    contract: JsonValueSchema,
    deadlineAt: v.nullable(TimestampSchema),
  }),
  "interaction.accepted": strictObject({
    interactionId: OpaqueIdSchema,
    submissionId: OpaqueIdSchema,
    output: JsonValueSchema,
    /**
     * From a prepared process whose validate request named the epoch an acceptance launches
     * (`next`): that epoch's first messages (the next model step's `node.started` and
     * `interaction.requested`, under its header), decided and rendered ahead from the facts the
     * acceptance makes. The host commits them with the acceptance and the launch, or drops them
     * (speculative-start.ts); each is checked like any message of that epoch.
     */
    next: v.optional(v.pipe(v.array(v.unknown()), v.minLength(1), v.maxLength(2))),
  }),
  "interaction.rejected": strictObject({
    interactionId: OpaqueIdSchema,
    submissionId: OpaqueIdSchema,
    error: FactErrorSchema,
  }),
  /**
   * Finishes a notify node's running attempt (instead of `node.finished`): the attempt becomes
   * `ok` with output `{kind, message}` and the notification is enqueued in the same commit.
   */
  "notification.requested": strictObject({
    kind: v.picklist(NOTIFICATION_KINDS),
    message: v.pipe(v.string(), v.maxLength(65_536)),
  }),
  /** Right before `run.finished(completed)`: the root's rendered `presentationPrompt`. */
  "presentation.requested": strictObject({
    prompt: v.pipe(v.string(), v.maxLength(MAX_PRESENTATION_PROMPT_CHARS)),
  }),
  "effect.reserve": strictObject({
    /** Source resource, effect type and author key together form the effect key. */
    resource: v.pipe(v.string(), v.minLength(1), v.maxLength(1000)),
    effectType: v.pipe(v.string(), v.minLength(1), v.maxLength(200)),
    idempotencyKey: v.pipe(v.string(), v.minLength(1), v.maxLength(1000)),
    /** Fingerprint of the effect request; the same key with another fingerprint is refused. */
    requestFingerprint: DigestSchema,
    contract: v.picklist(EFFECT_CONTRACTS),
  }),
  "effect.settle": strictObject({
    effectId: OpaqueIdSchema,
    outcome: v.picklist(EFFECT_OUTCOMES),
    receipt: v.optional(JsonValueSchema),
    error: v.optional(FactErrorSchema),
  }),
  "worker.progress": nonArray(v.variant("op", [
    v.strictObject({ op: v.literal("heartbeat") }),
    /** The next piece of the run facts after `worker.ready` (no receipt: it changes nothing). */
    v.strictObject({ op: v.literal("facts.next") }),
    /**
     * Before a model step: may the run spend now? The reply's result is `{stop}` (why not: its
     * spend against its budget or its controller's) or `{}` (no receipt: it changes nothing).
     */
    v.strictObject({ op: v.literal("budget.check") }),
    v.strictObject({
      op: v.literal("process.register"),
      pid: PidSchema,
      /** Start identity from /proc/PID/stat (field 22), guarding against PID reuse. */
      startTime: v.pipe(v.string(), v.regex(/^[0-9]{1,20}$/)),
      processGroup: PidSchema,
    }),
    /** A running model step's whole usage so far (a long step: durable before its outcome). */
    v.strictObject({ op: v.literal("usage"), attemptId: OpaqueIdSchema, usage: StepUsageSchema }),
    /**
     * What an interrupted attempt used and how many submissions its model made, read back from
     * its Pi session by the worker that runs its step again (the part a crash kept from
     * reaching the outcome: the submitting call's usage, an accepted submission's count);
     * never lowers either.
     */
    v.strictObject({
      op: v.literal("usage.recovered"),
      attemptId: OpaqueIdSchema,
      usage: v.optional(StepUsageSchema),
      submitted: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1))),
    }),
    /** A headless model step's rejected submissions so far, after each (the whole tally). */
    v.strictObject({
      op: v.literal("submissions"),
      attemptId: OpaqueIdSchema,
      tally: SubmissionTallySchema,
    }),
    v.strictObject({
      op: v.literal("process.unregister"),
      pid: PidSchema,
      startTime: v.pipe(v.string(), v.regex(/^[0-9]{1,20}$/)),
    }),
  ])),
  "worker.exiting": strictObject({
    reason: v.picklist(WORKER_EXIT_REASONS),
    detail: v.optional(ShortTextSchema),
    /** false: the process must not be kept as the run's prepared process (it retires). */
    reusable: v.optional(v.literal(false)),
  }),
} as const satisfies Record<WorkerMessageKind, v.GenericSchema<unknown, unknown>>;

export type WorkerPayload<K extends WorkerMessageKind> = v.InferOutput<
  (typeof WORKER_PAYLOAD_SCHEMAS)[K]
>;

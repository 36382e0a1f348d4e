/**
 * Payloads and receipts of the interactive-step operations a Pi session uses: claim the
 * session's current request, record its presentation, submit and update it, report a turn that
 * ended without a submission, and wait for changes of the session's runs (a long poll, so a new
 * step reaches the session within milliseconds).
 */
import * as v from "valibot";
import { ClientJsonValueSchema } from "./json-depth.ts";
import { MAX_STEP_REMINDERS, StepContractSchema } from "./step-contract-schema.ts";
import { StepUsageSchema } from "./step-usage.ts";
import {
  ErrorInfoSchema,
  looseObject,
  OpaqueIdSchema,
  strictObject,
  TimestampSchema,
} from "./fields.ts";

const NodeIdSchema = v.pipe(v.string(), v.minLength(1), v.maxLength(1000));
const SessionIdSchema = OpaqueIdSchema;
const SubmissionStatusSchema = v.picklist(["validating", "accepted", "rejected"]);

/** How long a call may hold its answer for a verdict or a change (ms). */
const WaitMsSchema = (fallback: number) =>
  v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0), v.maxValue(30_000)), fallback);

/**
 * The session's reserved run: its one non-terminal interactive run (null when none). A restarted
 * Pi finds its run this way, with no session id in any receipt.
 */
const ActiveRunSchema = looseObject({
  runId: OpaqueIdSchema,
  revision: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
});

/**
 * `interaction.claim`: the session's current interactive request (its oldest pending one: one
 * session presents one interaction at a time, the others wait in creation order). Repeating it
 * returns the same request until it is settled; the first claim records `claimedAt`.
 */
export const InteractionClaimPayloadSchema = strictObject({ sessionId: SessionIdSchema });

/** One pending request as the session presents it (`interaction.claim`, a submit's `next`). */
export const ClaimedInteractionSchema = looseObject({
  interactionId: OpaqueIdSchema,
  runId: OpaqueIdSchema,
  /** The run revision now (what `expectedRevision` may carry). */
  expectedRevision: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
  kind: v.picklist(["agent", "assistantMessage"]),
  contract: StepContractSchema,
  presentation: looseObject({
    sessionEntryId: v.nullable(OpaqueIdSchema),
    claimedAt: TimestampSchema,
    presentedAt: v.nullable(TimestampSchema),
  }),
  reminders: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
  /** The latest submission of this request, while it is validating or after a rejection. */
  submission: v.nullable(looseObject({
    submissionId: OpaqueIdSchema,
    status: SubmissionStatusSchema,
    error: v.optional(ErrorInfoSchema),
  })),
  createdAt: TimestampSchema,
});

export const InteractionClaimReceiptSchema = looseObject({
  interaction: v.nullable(ClaimedInteractionSchema),
  /** Later pending requests of this session, waiting behind `interaction`. */
  waiting: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
  activeRun: v.optional(v.nullable(ActiveRunSchema)),
});

/**
 * `interaction.present`: the public Pi session entry id of the message that shows the step.
 * Compare-and-set: it is recorded when the stored id equals `replaces` (null: none yet) and is
 * idempotent when it already equals `sessionEntryId`.
 */
export const InteractionPresentPayloadSchema = strictObject({
  interactionId: OpaqueIdSchema,
  sessionId: SessionIdSchema,
  sessionEntryId: OpaqueIdSchema,
  replaces: v.optional(v.nullable(OpaqueIdSchema)),
});

export const InteractionPresentReceiptSchema = looseObject({
  interactionId: OpaqueIdSchema,
  sessionEntryId: OpaqueIdSchema,
  presentedAt: TimestampSchema,
});

/**
 * `interaction.submit`: a workflow tool submission for one pending interactive request. The
 * envelope carries the run, the expected revision and the tool-call id as idempotency key. The
 * answer waits up to `waitMs` for the validation child's verdict. After an acceptance it may wait
 * up to `nextWaitMs` more for the session's next step (the run's next interactive request), so
 * the extension can show it before the tool call returns and the model does it in the same turn
 * instead of ending one first; it stops waiting as soon as the run goes elsewhere.
 */
export const InteractionSubmitPayloadSchema = strictObject({
  interactionId: OpaqueIdSchema,
  nodeId: NodeIdSchema,
  attemptId: OpaqueIdSchema,
  sessionId: SessionIdSchema,
  submission: ClientJsonValueSchema,
  /**
   * What the step used so far: the origin session's assistant messages since the step was
   * shown (reminders and rejected submissions included), set on the attempt, never added.
   */
  usage: v.optional(StepUsageSchema),
  waitMs: WaitMsSchema(10_000),
  nextWaitMs: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0), v.maxValue(5_000)), 0),
  /**
   * The session entry presenting the step, when the extension has not had it recorded yet: the
   * host records it first, in the submission's commit, as `interaction.present` would (a refused
   * presentation, e.g. another entry recorded meanwhile, does not refuse the submission). The
   * model's submit then waits for no separate presentation round trip.
   */
  presentation: v.optional(strictObject({
    sessionEntryId: OpaqueIdSchema,
    replaces: v.optional(v.nullable(OpaqueIdSchema)),
  })),
});

/** A tool `update` as the workflow tool takes it: `{type, key?, data}`. */
export const InteractionUpdateSchema = strictObject({
  type: v.pipe(v.string(), v.minLength(1), v.maxLength(100)),
  key: v.optional(v.pipe(v.string(), v.maxLength(1000))),
  data: ClientJsonValueSchema,
});

/** `interaction.update`: a progress update for a pending interactive request. */
export const InteractionUpdatePayloadSchema = strictObject({
  interactionId: OpaqueIdSchema,
  nodeId: NodeIdSchema,
  attemptId: OpaqueIdSchema,
  sessionId: SessionIdSchema,
  update: InteractionUpdateSchema,
  /** What the step used so far (as `interaction.submit` says). */
  usage: v.optional(StepUsageSchema),
});

/**
 * Receipt of a submission or update. A submission is `validating` until its workflow child
 * accepts or rejects it; `message` is the tool-result text for the model.
 */
export const InteractionReceiptSchema = looseObject({
  interactionId: OpaqueIdSchema,
  submissionId: v.optional(OpaqueIdSchema),
  status: v.picklist(["validating", "accepted", "rejected", "updated"]),
  error: v.optional(ErrorInfoSchema),
  message: v.optional(v.string()),
  /**
   * Accepted with `nextWaitMs`: the session's next pending request once it committed in time
   * (claimed, as `interaction.claim` returns it), or null when the run went elsewhere.
   */
  next: v.optional(v.nullable(ClaimedInteractionSchema)),
  /**
   * With a `next` step: the session's cursor (as `session.wait` reports it) read before that
   * claim, so a push at or below it brings nothing newer than `next` and needs no claim.
   */
  cursor: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0))),
});

/**
 * `interaction.remind`: the agent settled without submitting. `reminder` is the stored count + 1:
 * up to MAX_STEP_REMINDERS the answer is a reminder to present, after that the attempt fails.
 */
export const InteractionRemindPayloadSchema = strictObject({
  interactionId: OpaqueIdSchema,
  sessionId: SessionIdSchema,
  reminder: v.pipe(v.number(), v.safeInteger(), v.minValue(1), v.maxValue(MAX_STEP_REMINDERS + 1)),
  /** What the step used so far (as `interaction.submit` says). */
  usage: v.optional(StepUsageSchema),
});

export const InteractionRemindReceiptSchema = looseObject({
  interactionId: OpaqueIdSchema,
  /** `remind`: present `message`; `failed`: the attempt failed; `wait`: a verdict is pending. */
  action: v.picklist(["remind", "failed", "wait"]),
  reminder: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0))),
  message: v.optional(v.string()),
  error: v.optional(ErrorInfoSchema),
});

/**
 * `session.wait`: a long poll. Answers as soon as anything of the session's runs committed after
 * `cursor` (the global viewer-delta revision), or after `waitMs`; without a cursor at once.
 */
export const SessionWaitPayloadSchema = strictObject({
  sessionId: SessionIdSchema,
  cursor: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0))),
  waitMs: WaitMsSchema(25_000),
});

export const SessionWaitReceiptSchema = looseObject({
  cursor: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
  changed: v.boolean(),
  activeRun: v.optional(v.nullable(ActiveRunSchema)),
});

/**
 * What a waiting run asks. A worker that reaches a human decision saves its request (title,
 * subject, presentation blocks, typed choices, the normalized `onTimeout` default); a checkpoint
 * saves its request value and an optional answer schema. The host validates both before it
 * records them, checks answers against them without running workflow code, and shows them in
 * `run.status` as `waiting`.
 */
import * as v from "valibot";
import { type AnswerSchema, AnswerSchemaSchema } from "./answer-schema.ts";
import { OpaqueIdSchema, strictObject, TimestampSchema } from "./fields.ts";
import { JsonValueSchema } from "./run-facts.ts";

export const HUMAN_DECISION_REQUEST_SCHEMA = "pi-workflows.human-decision-request.v1";
export const DECISION_PRESENTATION_SCHEMA = "pi-workflows.decision-presentation.v1";

/** The operations that answer each waiting kind: a person only, for a protected decision. */
export const ANSWER_OPERATIONS = {
  checkpoint: "checkpoint.answer",
  humanDecision: "decision.answer",
} as const;
export type WaitingKind = keyof typeof ANSWER_OPERATIONS;

const Text = v.pipe(v.string(), v.maxLength(16_000));

export type PresentationBlock =
  | { kind: "paragraph"; text: string }
  | { kind: "section"; title: string; blocks?: PresentationBlock[] }
  | { kind: "bullets"; items: string[] }
  | { kind: "fields"; items: { label: string; value: string }[] }
  | { kind: "preformatted"; text: string };

export const PresentationBlockSchema: v.GenericSchema<PresentationBlock> = v.lazy(() =>
  v.variant("kind", [
    v.object({ kind: v.literal("paragraph"), text: Text }),
    v.object({
      kind: v.literal("section"),
      title: Text,
      blocks: v.optional(v.array(PresentationBlockSchema)),
    }),
    v.object({ kind: v.literal("bullets"), items: v.array(Text) }),
    v.object({
      kind: v.literal("fields"),
      items: v.array(v.object({ label: Text, value: Text })),
    }),
    v.object({ kind: v.literal("preformatted"), text: Text }),
  ]) as v.GenericSchema<PresentationBlock>
);

export const DecisionPresentationSchema = v.object({
  schema: v.literal(DECISION_PRESENTATION_SCHEMA),
  summary: Text,
  blocks: v.array(PresentationBlockSchema),
});

export const TextInputSchema = v.object({
  name: v.pipe(v.string(), v.minLength(1), v.maxLength(200)),
  prompt: Text,
  minLength: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
  maxLength: v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
});

export const HumanChoiceSchema = v.object({
  label: Text,
  input: v.optional(TextInputSchema),
});

export const HumanResponseSchema = strictObject({
  choice: v.pipe(v.string(), v.minLength(1)),
  text: v.optional(v.string()),
});

export const HumanDecisionRequestSchema = v.object({
  schema: v.literal(HUMAN_DECISION_REQUEST_SCHEMA),
  audience: v.string(),
  title: Text,
  /** What the decision is about: any JSON value. */
  subject: JsonValueSchema,
  presentation: DecisionPresentationSchema,
  revision: v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
  choices: v.pipe(
    v.record(v.pipe(v.string(), v.minLength(1)), HumanChoiceSchema),
    v.check((c) => Object.keys(c).length > 0, "a human decision needs at least one choice"),
  ),
  /** The normalized default the host records at `afterMs` after the run started waiting. */
  onTimeout: v.nullable(v.object({
    afterMs: v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
    response: HumanResponseSchema,
  })),
});
export type HumanDecisionRequest = v.InferOutput<typeof HumanDecisionRequestSchema>;
export type HumanChoiceSpec = v.InferOutput<typeof HumanChoiceSchema>;

/** `run.status`'s `waiting`: what a waiting run asks, who may answer it and until when. */
export const WaitingSchema = v.object({
  kind: v.picklist(["checkpoint", "humanDecision"]),
  /** The operation that answers it. */
  operation: v.picklist(["checkpoint.answer", "decision.answer"]),
  decisionId: OpaqueIdSchema,
  nodeId: v.string(),
  attemptId: OpaqueIdSchema,
  since: TimestampSchema,
  /** The author's `timeoutMs` while waiting: the attempt ends `timed_out` then. */
  deadlineAt: v.nullable(TimestampSchema),
  /** A human decision's saved default and when the host records it. */
  default: v.nullable(v.object({ at: TimestampSchema, answer: HumanResponseSchema })),
  /** The human decision's request (title, subject, presentation, choices, audience). */
  decision: v.optional(HumanDecisionRequestSchema),
  /** The checkpoint's request value (`{summary}` unless the node computes its own). */
  request: v.optional(JsonValueSchema),
  /** The shape a checkpoint's answer must have, when it declares one. */
  answerSchema: v.optional(AnswerSchemaSchema),
});
export type Waiting = v.InferOutput<typeof WaitingSchema> & { answerSchema?: AnswerSchema };

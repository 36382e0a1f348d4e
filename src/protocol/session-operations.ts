/**
 * Payloads and receipts of the operations a Pi session uses: answering checkpoints and human
 * decisions and submitting interactive steps. The outbox operations (notifications and owed
 * turns) are in outbox-operations.ts.
 */
import * as v from "valibot";
import { ClientJsonValueSchema } from "./json-depth.ts";
import { JsonValueSchema } from "./run-facts.ts";
import { RunSummarySchema } from "./run-operations.ts";
import { looseObject, OpaqueIdSchema, strictObject } from "./fields.ts";

const NodeIdSchema = v.pipe(v.string(), v.minLength(1), v.maxLength(1000));

/**
 * `checkpoint.answer` (run id in the envelope): an answer to an ordinary checkpoint, from a
 * person or the model's tool. It names the waiting node and attempt, so a stale answer is refused.
 */
export const CheckpointAnswerPayloadSchema = strictObject({
  nodeId: NodeIdSchema,
  attemptId: OpaqueIdSchema,
  answer: ClientJsonValueSchema,
});

/** `decision.answer`: a person's answer to a protected human decision (never the model). */
export const DecisionAnswerPayloadSchema = strictObject({
  nodeId: NodeIdSchema,
  attemptId: OpaqueIdSchema,
  answer: ClientJsonValueSchema,
});

/**
 * Receipt of an answer. The answer resumes the waiting run in place: the same run id continues
 * from the answered node under a new claim generation (there is no separate continuation run).
 */
export const AnswerReceiptSchema = looseObject({
  answered: looseObject({
    runId: OpaqueIdSchema,
    nodeId: NodeIdSchema,
    attemptId: OpaqueIdSchema,
    decisionId: OpaqueIdSchema,
    kind: v.picklist(["checkpoint", "humanDecision"]),
    resolution: v.picklist(["answered", "timeoutDefault"]),
    /** The answer as recorded (a decision's answer normalized: `{choice, text?}`). */
    answer: JsonValueSchema,
  }),
  run: RunSummarySchema,
});

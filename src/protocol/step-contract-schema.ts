/**
 * The step contract of one model step (an agent, decision or assistant-message attempt): what a
 * worker proposes with `interaction.requested`, what the host stores with the request and what
 * the Pi extension reads to present the step. The text of the message and the exact tool
 * arguments are built by `src/workflows/step-contract.ts`; this file holds only the shape, so
 * the extension (which imports protocol and client only) can validate it.
 */
import * as v from "valibot";
import { looseObject, OpaqueIdSchema, TimestampSchema } from "./fields.ts";

export const STEP_CONTRACT_SCHEMA = "pi-workflows.step-contract.v1";

/** Reminders after the agent settled without submitting, before the attempt fails. */
export const MAX_STEP_REMINDERS = 2;

export const StepContractSchema = looseObject({
  schema: v.literal(STEP_CONTRACT_SCHEMA),
  /** `agent` (agent and decision nodes) or `assistantMessage` (a visible reply). */
  kind: v.picklist(["agent", "assistantMessage"]),
  nodeKind: v.picklist(["agent", "decision", "assistantMessage"]),
  runId: OpaqueIdSchema,
  workflowName: v.pipe(v.string(), v.minLength(1), v.maxLength(1000)),
  /** The node id: the tool's `step`. */
  step: v.pipe(v.string(), v.minLength(1), v.maxLength(1000)),
  /** The attempt id: the tool's `attempt`. */
  attempt: OpaqueIdSchema,
  statusDetail: v.nullable(v.pipe(v.string(), v.maxLength(1000))),
  expectedOutput: v.nullable(v.pipe(v.string(), v.maxLength(65_536))),
  /** The resolved wall-clock deadline of the attempt (epoch ms), or null. */
  deadlineAt: v.nullable(TimestampSchema),
  /** The whole step message: the node prompt, then the contract block. */
  message: v.pipe(v.string(), v.minLength(1), v.maxLength(200_000)),
});
export type StepContract = v.InferOutput<typeof StepContractSchema>;

/**
 * The step contract of one model step (an agent, decision or assistant-message attempt): what a
 * worker proposes with `interaction.requested`, what the host stores with the request and what
 * the Pi extension reads to present the step. The text of the message and the exact tool
 * arguments are built by `src/workflows/step-contract.ts`; this file holds only the shape, so
 * the extension (which imports protocol and client only) can validate it.
 */
import * as v from "valibot";
import { looseObject, OpaqueIdSchema, TimestampSchema } from "./fields.ts";
import type { FactError } from "./run-facts.ts";

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

/**
 * The attempt's failure after the last reminder went unanswered (routable as `failed`):
 * `noSubmission` when the model never submitted, `submissionsRejected` (with the count and the last
 * rejection message) when it submitted and the node's rules rejected every submission.
 */
export function noSubmissionError(
  contract: Pick<StepContract, "step">,
  rejected: { count: number; last: string | null } = { count: 0, last: null },
): FactError {
  const turns = MAX_STEP_REMINDERS + 1;
  if (rejected.count === 0) {
    return {
      code: "noSubmission",
      message: `Step "${contract.step}" failed: the agent ended its turn ${turns} times without ` +
        "submitting an output",
    };
  }
  const plural = rejected.count === 1 ? "submission" : "submissions";
  return {
    code: "submissionsRejected",
    message: `Step "${contract.step}" failed: the agent ended its turn ${turns} times without ` +
      `an accepted output (${rejected.count} ${plural}, all rejected)` +
      (rejected.last ? `; the last rejection: ${rejected.last}` : ""),
  };
}

/**
 * Checks that a tool call names the pending step and attempt. Null when it does; otherwise the
 * actionable refusal the model sees (the step or attempt it must use instead).
 */
export function checkSubmitTarget(
  contract: Pick<StepContract, "step" | "attempt">,
  call: { step?: unknown; attempt?: unknown },
  action: "submit" | "update" = "submit",
): FactError | null {
  const verb = action === "submit" ? "Submission" : "Update";
  if (typeof call.step !== "string" || typeof call.attempt !== "string") {
    return {
      code: "contractMismatch",
      message: `${verb} refused: "step" and "attempt" are required; use step ${
        JSON.stringify(contract.step)
      } and attempt ${JSON.stringify(contract.attempt)}`,
    };
  }
  if (call.step !== contract.step) {
    return {
      code: "wrongStep",
      message: `${verb} refused: step ${JSON.stringify(call.step)} is not the pending step; ` +
        `the pending step is ${JSON.stringify(contract.step)} (attempt ${
          JSON.stringify(contract.attempt)
        })`,
    };
  }
  if (call.attempt !== contract.attempt) {
    return {
      code: "staleAttempt",
      message: `${verb} refused: attempt ${JSON.stringify(call.attempt)} of step ${
        JSON.stringify(contract.step)
      } is not the current attempt; use attempt ${JSON.stringify(contract.attempt)}`,
    };
  }
  return null;
}

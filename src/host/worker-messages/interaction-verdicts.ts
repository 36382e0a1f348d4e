/**
 * What a validation child's verdict commits (validation.ts runs the child): the verdict is
 * checked against the submission it names, then an acceptance commits the output and makes the
 * run launchable again, a rejection keeps the request ready for a corrected retry. A stale
 * verdict (the submission moved on) commits nothing. A submission validated before it was
 * recorded (held-submission.ts) is recorded first, in the verdict's commit.
 */
import type { FactError } from "../../protocol/run-facts.ts";
import type { WorkerMessage } from "../../protocol/worker-messages.ts";
import type { ValidationJob } from "../../state/interaction-queries.ts";
import {
  acceptSubmission,
  rejectSubmission,
} from "../../state/transitions/interaction-verdicts.ts";
import type { HostContext } from "../host-context.ts";
import { traceMark } from "../../state/transactions.ts";
import { type HeldSubmission, withHeldRecorded } from "../held-submission.ts";

/** A validation's submission; `held` when it is recorded only with its verdict. */
export type VerdictJob = ValidationJob & { held?: HeldSubmission };

export type Verdict =
  | WorkerMessage & { kind: "interaction.accepted" }
  | WorkerMessage & { kind: "interaction.rejected" };

/** The child's verdict, checked against the submission; a string says why it is refused. */
export function judgeVerdict(job: ValidationJob, message: WorkerMessage): Verdict | string {
  if (message.kind !== "interaction.accepted" && message.kind !== "interaction.rejected") {
    return `it sent ${message.kind} instead of a verdict`;
  }
  if (
    message.attemptId !== job.attemptId || message.payload.interactionId !== job.interactionId ||
    message.payload.submissionId !== job.submissionId
  ) {
    return "its verdict names another submission";
  }
  return message;
}

/** Commits an acceptance; false when it was stale. */
export function acceptVerdict(
  ctx: HostContext,
  job: VerdictJob,
  verdict: Verdict & { kind: "interaction.accepted" },
): boolean {
  traceMark(ctx.store, "verdict");
  const done = withHeldRecorded(ctx.store, job.held, () =>
    acceptSubmission(ctx.store, {
      submissionId: job.submissionId,
      generation: job.generation,
      output: verdict.payload.output,
    }));
  ctx.log("interaction.accepted", { run: job.runId, stale: done === null });
  return done !== null;
}

export function rejectVerdict(ctx: HostContext, job: VerdictJob, error: FactError) {
  const done = withHeldRecorded(ctx.store, job.held, () =>
    rejectSubmission(ctx.store, {
      submissionId: job.submissionId,
      generation: job.generation,
      error,
    }));
  ctx.log("interaction.rejected", {
    run: job.runId,
    code: error.code.slice(0, 64),
    stale: done === null,
  });
}

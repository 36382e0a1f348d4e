/**
 * `pi-workflows worker --validate`: the supervised child that checks one interactive submission.
 * It reads one validate request, verifies the run's saved source identity before it imports any
 * workflow module, loads the workflow, asks for the run's facts in bounded pieces, runs the
 * tolerant JSON parsing and the node's rules (`validate`, a decision's choices, an assistant
 * message's text), and proposes ONE verdict,
 * `interaction.accepted` (with the accepted output) or `interaction.rejected` (with the
 * actionable error the model sees), under the request's launch header. Then it exits. It changes
 * nothing itself: the host commits the verdict.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { FrameError, MAX_FRAME_BYTES } from "../protocol/framing.ts";
import type { FactError } from "../protocol/run-facts.ts";
import { parseValidateRequest, type ValidateRequest } from "../protocol/validate-messages.ts";
import type { WorkerChannel } from "./channel.ts";
import { WORKER_EXIT } from "./exit-codes.ts";
import { ClaimLostStop, createProposer, type Proposer } from "./proposer.ts";
import { requestRunFacts } from "./receive-facts.ts";

export async function validateSubmission(channel: WorkerChannel): Promise<number> {
  const parsed = parseValidateRequest(await channel.firstFrame());
  if (!parsed.ok) throw new Error(`Validation request rejected: ${parsed.error}`);
  const request = parsed.value;
  const { launch } = request;
  const proposer = createProposer(channel, {
    schema: launch.schema,
    runId: launch.runId,
    generation: launch.generation,
    workerEpoch: launch.workerEpoch,
  });
  try {
    await propose(proposer, request, await verdict(proposer, request));
  } catch (error) {
    // The host refused the verdict as stale (a deadline closed the request meanwhile).
    if (error instanceof ClaimLostStop) return WORKER_EXIT.claimLost;
    throw error;
  }
  return WORKER_EXIT.done;
}

type Verdict = { ok: true; output: JsonValue } | {
  ok: false;
  error: FactError;
};

async function verdict(proposer: Proposer, request: ValidateRequest): Promise<Verdict> {
  try {
    process.chdir(request.launch.projectPath);
  } catch {
    return sourceChanged("the run's project directory cannot be entered");
  }
  const port = await import("./workflow-port.ts");
  const problem = port.checkSourceBeforeLoad(request.launch);
  if (problem !== null) return sourceChanged(problem.detail);
  const loaded = await port.loadRunWorkflow(request.launch);
  if (!loaded.ok) return sourceChanged(loaded.problem.detail);
  const facts = await requestRunFacts(proposer);
  const accepted = await loaded.workflow.acceptSubmission(
    request.nodeId,
    facts,
    request.attemptId,
    request.submission,
  );
  if (accepted.ok) return { ok: true, output: accepted.output };
  return {
    ok: false,
    error: { code: "outputRejected", message: accepted.message.slice(0, 8000) },
  };
}

function sourceChanged(detail: string): Verdict {
  return {
    ok: false,
    error: {
      code: "workflowSourceChanged",
      message: `Output not validated: ${
        detail.slice(0, 2000)
      }. Restore the workflow source or cancel the run`,
    },
  };
}

async function propose(proposer: Proposer, request: ValidateRequest, result: Verdict) {
  const ids = { interactionId: request.interactionId, submissionId: request.submissionId };
  if (result.ok) {
    try {
      await proposer.propose(
        "interaction.accepted",
        { ...ids, output: result.output },
        request.attemptId,
      );
      return;
    } catch (error) {
      if (!(error instanceof FrameError && error.code === "frameTooLarge")) throw error;
      result = {
        ok: false,
        error: {
          code: "outputTooLarge",
          message:
            `Output rejected: it is larger than the ${MAX_FRAME_BYTES} byte message limit; send a smaller output`,
        },
      };
    }
  }
  await proposer.propose(
    "interaction.rejected",
    { ...ids, error: result.error },
    request.attemptId,
  );
}

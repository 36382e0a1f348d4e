/**
 * `pi-workflows worker --validate`: the supervised child that checks one interactive submission.
 * It reads one validate request, verifies the run's saved source identity before it imports any
 * workflow module, loads the workflow, reads the run's facts in bounded pieces (the first in the
 * request when it fits), runs the tolerant JSON parsing and the node's rules (`validate`, a
 * decision's choices, an assistant message's text), and proposes ONE verdict,
 * `interaction.accepted` (with the accepted output) or `interaction.rejected` (with the
 * actionable error the model sees), under the request's launch header. Then it exits. It changes
 * nothing itself: the host commits the verdict.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { FrameError, MAX_FRAME_BYTES } from "../protocol/framing.ts";
import type { FactError, RunFacts } from "../protocol/run-facts.ts";
import { parseValidateRequest, type ValidateRequest } from "../protocol/validate-messages.ts";
import type { WorkerChannel } from "./channel.ts";
import { WORKER_EXIT } from "./exit-codes.ts";
import { ClaimLostStop, createProposer, type Proposer } from "./proposer.ts";
import { requestRunFacts } from "./receive-facts.ts";
import type { RunWorkflow } from "./workflow-port.ts";

export async function validateSubmission(channel: WorkerChannel): Promise<number> {
  const parsed = parseValidateRequest(await channel.firstFrame());
  if (!parsed.ok) throw new Error(`Validation request rejected: ${parsed.error}`);
  return (await answerValidation(channel, parsed.value, loadFresh)).code;
}

/** The run's workflow for one validation, or why its source cannot be used. */
export type ValidationLoad = (
  request: ValidateRequest,
) => Promise<{ ok: true; workflow: RunWorkflow } | { ok: false; detail: string }>;

/**
 * The next epoch's first messages, proposed ahead inside an acceptance (a prepared process whose
 * request names that epoch: speculative-step.ts), from the facts the acceptance makes; null for
 * none.
 */
export type AheadProposal = (facts: RunFacts, output: JsonValue) => Promise<JsonValue[] | null>;

/**
 * Checks one submission with the workflow `load` gives and proposes the verdict under the
 * request's launch header. Returns the exit code this check alone would end with, whether the
 * submission was accepted, and whether the host committed the messages proposed ahead with it.
 */
export async function answerValidation(
  channel: WorkerChannel,
  request: ValidateRequest,
  load: ValidationLoad,
  ahead?: AheadProposal,
): Promise<{ code: number; accepted: boolean; aheadCommitted: boolean }> {
  const { launch } = request;
  const proposer = createProposer(channel, {
    schema: launch.schema,
    runId: launch.runId,
    generation: launch.generation,
    workerEpoch: launch.workerEpoch,
  });
  try {
    const answer = await propose(proposer, request, await verdict(proposer, request, load, ahead));
    return { code: WORKER_EXIT.done, ...answer };
  } catch (error) {
    // The host refused the verdict as stale (a deadline closed the request meanwhile).
    if (error instanceof ClaimLostStop) {
      return { code: WORKER_EXIT.claimLost, accepted: false, aheadCommitted: false };
    }
    throw error;
  }
}

type Verdict = { ok: true; output: JsonValue; next: JsonValue[] | null } | {
  ok: false;
  error: FactError;
};

/** A fresh child: enter the project, compare the saved source, then load it. */
const loadFresh: ValidationLoad = async (request) => {
  try {
    process.chdir(request.launch.projectPath);
  } catch {
    return { ok: false, detail: "the run's project directory cannot be entered" };
  }
  const port = await import("./workflow-port.ts");
  const problem = port.checkSourceBeforeLoad(request.launch);
  if (problem !== null) return { ok: false, detail: problem.detail };
  const loaded = await port.loadRunWorkflow(request.launch);
  return loaded.ok ? loaded : { ok: false, detail: loaded.problem.detail };
};

async function verdict(
  proposer: Proposer,
  request: ValidateRequest,
  load: ValidationLoad,
  ahead: AheadProposal | undefined,
): Promise<Verdict> {
  const loaded = await load(request);
  if (!loaded.ok) return sourceChanged(loaded.detail);
  const facts = await requestRunFacts(proposer, request.facts);
  const accepted = await loaded.workflow.acceptSubmission(
    request.nodeId,
    facts,
    request.attemptId,
    request.submission,
  );
  if (accepted.ok) {
    const next = ahead ? await ahead(facts, accepted.output) : null;
    return { ok: true, output: accepted.output, next };
  }
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

/** Proposes the verdict: whether it was an acceptance, and whether what came ahead committed. */
async function propose(
  proposer: Proposer,
  request: ValidateRequest,
  result: Verdict,
): Promise<{ accepted: boolean; aheadCommitted: boolean }> {
  const ids = { interactionId: request.interactionId, submissionId: request.submissionId };
  if (result.ok) {
    const fields = { ...ids, output: result.output };
    // What comes ahead is dropped rather than make the verdict too large to send.
    const withNext = result.next === null ? fields : { ...fields, next: result.next };
    const kind = "interaction.accepted";
    try {
      const reply = await proposer.propose(
        kind,
        proposer.fits({ kind, fields: withNext, attemptId: request.attemptId }) ? withNext : fields,
        request.attemptId,
      );
      const next = (reply.result as { next?: unknown } | undefined)?.next;
      return { accepted: true, aheadCommitted: next === "committed" };
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
  return { accepted: false, aheadCommitted: false };
}

/**
 * The running attempt's submissions on their way to the host. Each verdict adds to the tally. A
 * rejection sends the whole tally at once as `worker.progress {op: "submissions"}`, awaited, so
 * it is recorded before the model hears it (it stays durable when the worker dies next). An
 * accepted submission ends the step: its tally rides on the outcome's own commit (`close`), so
 * a step adds no commit for it. The host sets the tally (never adds), so a retried report does
 * not count twice. A worker killed between an accepted submission and its outcome leaves the
 * attempt interrupted with its earlier rejections counted; the step runs again.
 */
import {
  addVerdict,
  type SubmissionTally,
  type SubmissionVerdict,
} from "../protocol/submissions.ts";
import { ClaimLostStop, type Proposer } from "./proposer.ts";

export interface SubmissionRecorder {
  record(verdict: SubmissionVerdict): Promise<void>;
  /** The tally the outcome carries (one not sent yet), or null when there is none. */
  close(): SubmissionTally | null;
}

export function createSubmissionRecorder(
  proposer: Proposer,
  attemptId: string,
  onClaimLost: (error: ClaimLostStop) => void,
): SubmissionRecorder {
  let tally: SubmissionTally = { submitted: 0, rejected: 0 };
  let unsent = false;
  return {
    async record(verdict) {
      tally = addVerdict(tally, verdict);
      unsent = true;
      if (verdict.accepted) return;
      try {
        await proposer.propose("worker.progress", { op: "submissions", attemptId, tally });
        unsent = false;
      } catch (error) {
        // The claim moved on: the attempt is aborted; the step stops with it.
        if (error instanceof ClaimLostStop) onClaimLost(error);
        else throw error;
      }
    },
    close: () => unsent ? tally : null,
  };
}

/**
 * The running attempt's submissions on their way to the host: each verdict adds to the tally,
 * and the whole tally goes out as `worker.progress {op: "submissions"}`, awaited, so it is
 * recorded before the model hears the verdict and before the attempt's outcome. The host sets
 * the tally (never adds), so a retried report does not count twice.
 */
import {
  addVerdict,
  type SubmissionTally,
  type SubmissionVerdict,
} from "../protocol/submissions.ts";
import { ClaimLostStop, type Proposer } from "./proposer.ts";

export function createSubmissionRecorder(
  proposer: Proposer,
  attemptId: string,
  onClaimLost: (error: ClaimLostStop) => void,
): (verdict: SubmissionVerdict) => Promise<void> {
  let tally: SubmissionTally = { submitted: 0, rejected: 0 };
  return async (verdict) => {
    tally = addVerdict(tally, verdict);
    try {
      await proposer.propose("worker.progress", { op: "submissions", attemptId, tally });
    } catch (error) {
      // The claim moved on: the attempt is aborted; the step stops with it.
      if (error instanceof ClaimLostStop) onClaimLost(error);
      else throw error;
    }
  };
}

/**
 * What the model submitted in one model-step attempt: how many outputs it submitted, how many
 * the node's rules rejected, and the last rejection's message (what the model was told). Status,
 * `--wait`, JSON and the viewer show it, also for a step that succeeded after rejections (a step
 * whose every submission was rejected fails `submissionsRejected`: step-contract-schema.ts).
 */
import * as v from "valibot";

/** The stored (and shown) last rejection message is cut to this many characters. */
export const MAX_REJECTION_CHARS = 2000;

const CountSchema = v.pipe(v.number(), v.safeInteger(), v.minValue(0));

export const SubmissionTallySchema = v.pipe(
  v.strictObject({
    submitted: CountSchema,
    rejected: CountSchema,
    lastRejection: v.optional(v.pipe(v.string(), v.maxLength(MAX_REJECTION_CHARS))),
  }),
  v.check((t) => t.rejected <= t.submitted, "rejected cannot exceed submitted"),
);
export type SubmissionTally = v.InferOutput<typeof SubmissionTallySchema>;

/** One verdict on a submission, as the step's executor reports it. */
export type SubmissionVerdict = { accepted: true } | { accepted: false; message: string };

export function boundedRejection(message: string): string {
  return message.length > MAX_REJECTION_CHARS
    ? `${message.slice(0, MAX_REJECTION_CHARS - 3)}...`
    : message;
}

/** The tally after one more verdict. */
export function addVerdict(tally: SubmissionTally, verdict: SubmissionVerdict): SubmissionTally {
  return verdict.accepted ? { ...tally, submitted: tally.submitted + 1 } : {
    submitted: tally.submitted + 1,
    rejected: tally.rejected + 1,
    lastRejection: boundedRejection(verdict.message),
  };
}

/**
 * The attempt's submissions as one short phrase (`2 of 3 submissions rejected`); "" when none
 * was rejected (a clean step needs no word about it).
 */
export function rejectionsText(tally: Pick<SubmissionTally, "submitted" | "rejected">): string {
  if (tally.rejected === 0) return "";
  return `${tally.rejected} of ${tally.submitted} submission${
    tally.submitted === 1 ? "" : "s"
  } rejected`;
}

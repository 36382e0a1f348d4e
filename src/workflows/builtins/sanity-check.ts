/**
 * `sanity-check`: is this change worth landing? collect (the diff against `base` and the output
 * of `evidence` commands, one command batch) -> review (1-5 read-only reviewers in parallel in
 * one agent group, each through its own lens) -> report (the verdicts joined: keep / simplify /
 * refactor / drop / needs_evidence) -> a final notification. A reviewer that fails is reported
 * without a verdict; the run fails only when none gives one.
 */
import { action, agentGroup, compute, notify } from "../nodes.ts";
import { defineWorkflow } from "../define-workflow.ts";
import type { AgentGroupOutput } from "../agent-group.ts";
import {
  commandBatchInput,
  type EvidenceCommand,
  inputRecord,
  optionalText,
  READ_ONLY_TOOLS,
} from "./builtin-input.ts";
import {
  type ChangeSet,
  changesText,
  collectChanges,
  type EvidenceResult,
  runEvidence,
} from "./git-evidence.ts";
import {
  joinReviews,
  reportText,
  reviewerCount,
  reviewers,
  type ReviewReport,
} from "./review-verdicts.ts";

export interface SanityCheckInput {
  /** What the change is compared with (a git revision); default `HEAD`, the uncommitted work. */
  base: string;
  reviewers: number;
  focus: string | null;
  evidence: EvidenceCommand[];
  evidenceTimeoutMinutes: number;
}

const NAME = "sanity-check";

function readInput(raw: unknown): SanityCheckInput {
  const input = inputRecord(raw, NAME);
  const base = optionalText(input, "base", NAME) ?? "HEAD";
  if (base.startsWith("-")) throw new Error(`${NAME}: "base" must be a git revision`);
  return {
    base,
    reviewers: reviewerCount(input, NAME, 3),
    // `/workflow sanity-check look at the parser` passes the text as the focus.
    focus: optionalText(input, "focus", NAME) ?? optionalText(input, "task", NAME),
    ...commandBatchInput(input, "evidence", NAME, 10),
  };
}

export const sanityCheckWorkflow = defineWorkflow<SanityCheckInput>({
  name: NAME,
  contractId: "pi-workflows.sanity-check.v1",
  title: ({ input }) => `Sanity check against ${input.base}`,
  input: readInput,
  startAt: "collect",
  nodes: {
    collect: action({
      statusDetail: "collecting the diff and evidence",
      run: async (ctx) => {
        const changes = await collectChanges(ctx, ctx.input.base);
        const evidence = await runEvidence(ctx, ctx.input.evidence, {
          key: "evidence",
          timeoutMs: ctx.input.evidenceTimeoutMinutes * 60_000,
        });
        const empty = changes.stat === "" && changes.untracked.length === 0;
        return { changes, evidence, empty };
      },
    }),
    review: agentGroup({
      statusDetail: "reviewing",
      tools: READ_ONLY_TOOLS,
      maxConcurrency: 5,
      timeoutMs: 30 * 60_000,
      agents: ({ input, outputs }) => {
        const collected = outputs.collect as { changes: ChangeSet; evidence: EvidenceResult[] };
        return reviewers(
          input.reviewers,
          changesText(collected.changes, collected.evidence),
          input.focus,
        );
      },
    }),
    report: compute({
      run: ({ input, outputs }) => {
        const report = joinReviews((outputs.review as AgentGroupOutput).agents);
        return { status: "reviewed", base: input.base, ...report };
      },
    }),
    announce: notify({
      kind: "final",
      message: ({ outputs }) =>
        reportText("Sanity check", outputs.report as ReviewReport & { status: string }),
    }),
    nothing: notify({
      kind: "final",
      message: ({ input }) => `Sanity check: no changes against ${input.base}; nothing to review.`,
    }),
    done: compute({ run: ({ outputs }) => outputs.report }),
    empty: compute({ run: ({ input }) => ({ status: "nothingToReview", base: input.base }) }),
  },
  edges: [
    { from: "collect", switch: { on: "$.empty", cases: { true: "nothing", false: "review" } } },
    { from: "review", to: "report" },
    { from: "report", to: "announce" },
    { from: "announce", to: "done" },
    { from: "nothing", to: "empty" },
  ],
});

/**
 * `autoimplement`: from a task (planned by autoplan, included) or an adopted plan, to verified
 * changes in the work tree. implement -> verify (the `verify` commands, one command batch) ->
 * fix and verify again while it fails -> review (read-only reviewers in one agent group) -> fix
 * what they ask and verify again. Both loops are bounded: at most `maxFixRounds` fixes in all
 * (then it gives up, naming the failing commands) and `maxReviewRounds` reviews (then it ends
 * with the open findings). It never commits. Ends `{status: "implemented" | "gaveUp" | "blocked"}`.
 */
import { action, agent, agentGroup, compute, notify } from "../nodes.ts";
import { defineWorkflow } from "../define-workflow.ts";
import { includeWorkflow } from "../include.ts";
import type { AgentGroupOutput } from "../agent-group.ts";
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { NodeContext } from "../types.ts";
import {
  boundedInt,
  commandBatchInput,
  type EvidenceCommand,
  inputRecord,
  isRecord,
  optionalText,
  planInput,
  promptText,
  READ_ONLY_TOOLS,
} from "./builtin-input.ts";
import { autoplanWorkflow } from "./autoplan.ts";
import { changesText, collectChanges, type EvidenceResult, runEvidence } from "./git-evidence.ts";
import {
  joinReviews,
  reportText,
  reviewerCount,
  reviewers,
  type ReviewReport,
} from "./review-verdicts.ts";

export interface AutoimplementInput {
  task: string;
  plan: JsonValue | null;
  verify: EvidenceCommand[];
  verifyTimeoutMinutes: number;
  maxFixRounds: number;
  maxReviewRounds: number;
  reviewers: number;
}

interface Verification {
  passed: boolean;
  results: EvidenceResult[];
  /** Verifications so far, this one included (every one after the first follows a fix). */
  round: number;
}

interface Triage {
  route: "fix" | "done";
  round: number;
  verifyRound: number;
  report: ReviewReport;
}

const NAME = "autoimplement";

function readInput(raw: unknown): AutoimplementInput {
  const input = inputRecord(raw, NAME);
  const plan = planInput(input, NAME);
  const task = optionalText(input, "task", NAME) ??
    (plan === null ? null : promptText(plan, 200).split("\n")[0]);
  if (task === null) {
    throw new Error(`${NAME}: "task" (or an adopted "plan") is required`);
  }
  return {
    task,
    plan,
    ...commandBatchInput(input, "verify", NAME, 15),
    maxFixRounds: boundedInt(input, "maxFixRounds", NAME, { min: 0, max: 10, fallback: 3 }),
    maxReviewRounds: boundedInt(input, "maxReviewRounds", NAME, { min: 0, max: 5, fallback: 1 }),
    reviewers: reviewerCount(input, NAME, 2),
  };
}

/** The plan to implement: the adopted one, else autoplan's. */
function planOf(ctx: NodeContext<AutoimplementInput>): JsonValue {
  if (ctx.input.plan !== null) return ctx.input.plan;
  return (ctx.outputs.plan as { output: { plan: JsonValue } }).output.plan;
}

function fixesUsed(ctx: NodeContext<AutoimplementInput>): number {
  return Math.max(0, ((ctx.outputs.verify as Verification | undefined)?.round ?? 1) - 1);
}

function failuresText(results: EvidenceResult[]): string {
  return results.filter((r) => r.outcome !== "succeeded").map((r) =>
    `\`${r.command}\` ${r.outcome} (exit ${r.exitCode}):\n\`\`\`\n${r.tail}\n\`\`\``
  ).join("\n\n");
}

const WORK_NOTE = "Work in the project's files; do not commit, push or change git history.";

export const autoimplementWorkflow = defineWorkflow<AutoimplementInput>({
  name: NAME,
  contractId: "pi-workflows.autoimplement.v1",
  title: ({ input }) => `Implement: ${input.task.slice(0, 80)}`,
  input: readInput,
  maxSteps: 200,
  startAt: "start",
  includes: {
    plan: includeWorkflow(autoplanWorkflow, { input: ({ input }) => ({ task: input.task }) }),
  },
  nodes: {
    start: compute({ run: ({ input }) => ({ adopt: input.plan !== null }) }),
    implement: agent({
      statusDetail: "implementing",
      timeoutMs: 60 * 60_000,
      prompt: (ctx) =>
        `Implement this plan.\n\nTask: ${ctx.input.task}\n\nPlan:\n${promptText(planOf(ctx))}\n\n` +
        `${WORK_NOTE}` +
        (ctx.input.verify.length > 0
          ? ` It is verified afterwards with: ${
            ctx.input.verify.map((c) => [c.command, ...c.args].join(" ")).join("; ")
          }.`
          : ""),
      expectedOutput: '{"summary": "what you changed", "changed": ["src/x.ts"]}',
      validate: (output) => {
        if (!isRecord(output) || typeof output.summary !== "string") {
          throw new Error('send {"summary": "...", "changed": ["..."]}');
        }
      },
    }),
    verify: action({
      statusDetail: "verifying",
      run: async (ctx) => {
        const results = await runEvidence(ctx, ctx.input.verify, {
          key: "verify",
          timeoutMs: ctx.input.verifyTimeoutMinutes * 60_000,
        });
        return {
          passed: results.every((r) => r.outcome === "succeeded"),
          results,
          round: ctx.state.visit,
        };
      },
    }),
    checked: compute({
      run: (ctx) => {
        const verification = ctx.outputs.verify as Verification;
        const reviews = (ctx.outputs.triage as Triage | undefined)?.round ?? 0;
        if (verification.passed) {
          return { route: reviews < ctx.input.maxReviewRounds ? "review" : "done" };
        }
        return { route: fixesUsed(ctx) < ctx.input.maxFixRounds ? "fix" : "gaveUp" };
      },
    }),
    fix: agent({
      statusDetail: "fixing",
      timeoutMs: 30 * 60_000,
      prompt: (ctx) => {
        const verification = ctx.outputs.verify as Verification;
        const asked = verification.passed
          ? `Reviewers asked for changes:\n${
            reportText("Review", ctx.outputs.triage.report as ReviewReport)
          }`
          : `Verification failed:\n${failuresText(verification.results)}`;
        return `Fix round ${fixesUsed(ctx) + 1} of at most ${ctx.input.maxFixRounds}.\n\n` +
          `Task: ${ctx.input.task}\n\nPlan:\n${
            promptText(planOf(ctx))
          }\n\n${asked}\n\n${WORK_NOTE}`;
      },
      expectedOutput: '{"summary": "what you fixed"}',
      validate: (output) => {
        if (!isRecord(output) || typeof output.summary !== "string") {
          throw new Error('send {"summary": "what you fixed"}');
        }
      },
    }),
    diff: action({
      statusDetail: "collecting the diff",
      run: async (ctx) => ({ changes: await collectChanges(ctx, "HEAD") }),
    }),
    review: agentGroup({
      statusDetail: "reviewing",
      tools: READ_ONLY_TOOLS,
      timeoutMs: 30 * 60_000,
      agents: (ctx) =>
        reviewers(
          ctx.input.reviewers,
          `Task: ${ctx.input.task}\n\n${
            changesText(ctx.outputs.diff.changes, (ctx.outputs.verify as Verification).results)
          }`,
          null,
        ),
    }),
    triage: compute({
      run: (ctx) => {
        const report = joinReviews((ctx.outputs.review as AgentGroupOutput).agents);
        const verifyRound = (ctx.outputs.verify as Verification).round;
        // Findings get a fix while fixes remain; `checked` then decides whether to review again.
        const fix = report.verdict !== "keep" && fixesUsed(ctx) < ctx.input.maxFixRounds;
        return { route: fix ? "fix" : "done", round: ctx.state.visit, verifyRound, report };
      },
    }),
    announce: notify({
      kind: "final",
      message: (ctx) => {
        const triage = ctx.outputs.triage as Triage | undefined;
        const verification = ctx.outputs.verify as Verification;
        return `Implemented: ${ctx.input.task}\n${ctx.outputs.implement.summary}\n` +
          `Verification: ${verification.results.length} commands passed` +
          (triage ? `\n${reportText("Review", triage.report)}` : "");
      },
    }),
    done: compute({
      run: (ctx) => {
        const triage = ctx.outputs.triage as Triage | undefined;
        const verification = ctx.outputs.verify as Verification;
        return {
          status: "implemented",
          summary: ctx.outputs.implement.summary,
          fixRounds: fixesUsed(ctx),
          verification: verification.results,
          review: triage
            ? {
              verdict: triage.report.verdict,
              findings: triage.report.reviews.flatMap((r) =>
                r.findings.map((f) => ({ reviewer: r.reviewer, ...f }))
              ),
              failedReviewers: triage.report.failedReviewers,
              // A fix after the last review round is verified but was not reviewed again.
              addressedAfterReview: verification.round > triage.verifyRound,
            }
            : null,
        };
      },
    }),
    giveUp: notify({
      kind: "final",
      message: (ctx) =>
        `autoimplement gave up after ${fixesUsed(ctx)} fix rounds: verification still fails:\n${
          failuresText((ctx.outputs.verify as Verification).results)
        }`.slice(0, 60_000),
    }),
    gaveUp: compute({
      run: (ctx) => ({
        status: "gaveUp",
        fixRounds: fixesUsed(ctx),
        failing: (ctx.outputs.verify as Verification).results.filter((r) =>
          r.outcome !== "succeeded"
        ),
      }),
    }),
    blocked: compute({
      run: ({ outputs }) => ({
        status: "blocked",
        reason: (outputs.plan as { output: { reason: string } }).output.reason,
      }),
    }),
  },
  edges: [
    { from: "start", switch: { on: "$.adopt", cases: { true: "implement", false: "plan" } } },
    { from: "plan.ready", to: "implement" },
    { from: "plan.blocked", to: "blocked" },
    { from: "implement", to: "verify" },
    { from: "verify", to: "checked" },
    {
      from: "checked",
      switch: {
        on: "$.route",
        cases: { review: "diff", done: "announce", fix: "fix", gaveUp: "giveUp" },
      },
    },
    { from: "fix", to: "verify" },
    { from: "diff", to: "review" },
    { from: "review", to: "triage" },
    { from: "triage", switch: { on: "$.route", cases: { fix: "fix", done: "announce" } } },
    { from: "announce", to: "done" },
    { from: "giveUp", to: "gaveUp" },
  ],
});

/**
 * Read-only reviewers and their verdicts, shared by sanity-check and autoimplement: each
 * reviewer looks at the change through one lens and answers keep / simplify / refactor / drop /
 * needs_evidence, with findings. The overall verdict is the most severe one given.
 */
import type { AgentGroupMember, AgentGroupMemberResult } from "../types.ts";
import { boundedInt, type InputRecord, isRecord } from "./builtin-input.ts";

/** Least to most severe. */
export const VERDICTS = ["keep", "needs_evidence", "simplify", "refactor", "drop"] as const;
export type Verdict = (typeof VERDICTS)[number];

export interface Finding {
  verdict: Verdict;
  note: string;
  file?: string;
}

export interface Review {
  verdict: Verdict;
  summary: string;
  findings: Finding[];
}

export const LENSES: readonly { id: string; focus: string }[] = [
  { id: "correctness", focus: "bugs, wrong edge cases, broken contracts and error handling" },
  { id: "simplicity", focus: "needless complexity, duplication, dead code, code that should go" },
  { id: "evidence", focus: "whether tests and the evidence shown prove the change works" },
  { id: "design", focus: "fit with the codebase: layering, naming, where the code lives" },
  { id: "risk", focus: "security, data loss, concurrency and compatibility risks" },
];

/** The `reviewers` input: how many lenses review, 1 to one per lens. */
export function reviewerCount(input: InputRecord, workflow: string, fallback: number): number {
  return boundedInt(input, "reviewers", workflow, { min: 1, max: LENSES.length, fallback });
}

const EXPECTED =
  '{"verdict": "keep|simplify|refactor|drop|needs_evidence", "summary": "...", "findings": [{"verdict": "simplify", "file": "src/x.ts", "note": "..."}]}';

function isVerdict(value: unknown): value is Verdict {
  return typeof value === "string" && (VERDICTS as readonly string[]).includes(value);
}

export function checkReview(output: unknown): Review {
  if (!isRecord(output) || !isVerdict(output.verdict)) {
    throw new Error(`"verdict" must be one of ${VERDICTS.join(", ")}; send ${EXPECTED}`);
  }
  if (typeof output.summary !== "string" || output.summary.trim() === "") {
    throw new Error('"summary" is missing: one or two sentences on the change');
  }
  const findings = output.findings ?? [];
  if (!Array.isArray(findings)) throw new Error('"findings" must be a list');
  return {
    verdict: output.verdict,
    summary: output.summary,
    findings: findings.slice(0, 50).map((f, i) => {
      if (!isRecord(f) || !isVerdict(f.verdict) || typeof f.note !== "string") {
        throw new Error(`findings[${i}] needs "verdict" (${VERDICTS.join(", ")}) and "note"`);
      }
      return {
        verdict: f.verdict,
        note: f.note,
        ...(typeof f.file === "string" ? { file: f.file } : {}),
      };
    }),
  };
}

/** One reviewer per lens, each reading `context` (the change and its evidence). */
export function reviewers(
  count: number,
  context: string,
  focus: string | null,
): AgentGroupMember[] {
  return LENSES.slice(0, count).map((lens) => ({
    id: lens.id,
    statusDetail: `${lens.id} review`,
    prompt: `Review this change as a careful senior engineer. Your lens: ${lens.focus}.` +
      (focus ? ` The author asks you to look especially at: ${focus}.` : "") +
      "\n\nRead the changed files in the project as you need (read, grep, find, ls); change " +
      "nothing. Verdicts: keep (good as is), simplify, refactor, drop (should not land), " +
      "needs_evidence (claims not shown to work). Report progress with the workflow tool's " +
      "update action while you read.\n\n" + context,
    expectedOutput: EXPECTED,
    validate: (output) => checkReview(output),
  }));
}

export interface ReviewReport {
  verdict: Verdict;
  counts: Record<Verdict, number>;
  reviews: ({ reviewer: string } & Review)[];
  failedReviewers: { reviewer: string; error: string }[];
}

export function joinReviews(results: readonly AgentGroupMemberResult[]): ReviewReport {
  const counts = Object.fromEntries(VERDICTS.map((v) => [v, 0])) as Record<Verdict, number>;
  const reviews: ReviewReport["reviews"] = [];
  const failedReviewers: ReviewReport["failedReviewers"] = [];
  let worst = 0;
  for (const r of results) {
    if (r.outcome !== "ok") {
      failedReviewers.push({ reviewer: r.id, error: r.error.message });
      continue;
    }
    const review = r.output as unknown as Review;
    counts[review.verdict]++;
    worst = Math.max(worst, VERDICTS.indexOf(review.verdict));
    reviews.push({ reviewer: r.id, ...review });
  }
  return { verdict: VERDICTS[worst], counts, reviews, failedReviewers };
}

/** The report as a short notification text. */
export function reportText(title: string, report: ReviewReport): string {
  const lines = [`${title}: ${report.verdict}`];
  for (const review of report.reviews) {
    lines.push(`- ${review.reviewer}: ${review.verdict}: ${review.summary}`);
    for (const f of review.findings.slice(0, 5)) {
      lines.push(`  - ${f.verdict}${f.file ? ` ${f.file}` : ""}: ${f.note}`);
    }
  }
  for (const failed of report.failedReviewers) {
    lines.push(`- ${failed.reviewer}: no verdict (${failed.error.slice(0, 200)})`);
  }
  return lines.join("\n").slice(0, 60_000);
}

/**
 * `plan-approval`: a protected human decision on a plan (only a person answers it, never the
 * model): continue, stop, or replan with feedback. `policy` says whether to ask at all:
 * `required` waits for an answer, `auto` asks and continues by itself after `autoAfterMinutes`
 * (default 10), `skip` continues without asking. Exits `continue`, `stop`, `replan`.
 */
import { compute } from "../nodes.ts";
import { defineWorkflow } from "../define-workflow.ts";
import {
  choice,
  defineHumanChoices,
  humanDecision,
  humanDecisionEdge,
  textInput,
} from "../human-decision.ts";
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { PresentationBlock } from "../types.ts";
import {
  boundedInt,
  inputRecord,
  isRecord,
  oneOf,
  planInput,
  promptText,
} from "./builtin-input.ts";

export const APPROVAL_POLICIES = ["auto", "required", "skip"] as const;
export type ApprovalPolicy = (typeof APPROVAL_POLICIES)[number];

export interface PlanApprovalInput {
  plan: JsonValue;
  policy: ApprovalPolicy;
  autoAfterMinutes: number;
  title: string;
}

const NAME = "plan-approval";

const CHOICES = defineHumanChoices({
  continue: choice({ label: "Continue with this plan" }),
  stop: choice({ label: "Stop here" }),
  replan: choice({
    label: "Replan",
    input: textInput({ name: "feedback", prompt: "What should the new plan change?" }),
  }),
});

function readInput(raw: unknown): PlanApprovalInput {
  const input = inputRecord(raw, NAME);
  const plan = planInput(input, NAME);
  if (plan === null) {
    throw new Error(
      `${NAME}: "plan" is required: --input-json '{"plan": {...}, "policy": "required"}'`,
    );
  }
  const title = typeof input.title === "string" && input.title.trim() ? input.title.trim() : null;
  return {
    plan,
    policy: oneOf(input, "policy", NAME, APPROVAL_POLICIES, "required"),
    autoAfterMinutes: boundedInt(input, "autoAfterMinutes", NAME, {
      min: 1,
      max: 1440,
      fallback: 10,
    }),
    title: title ?? planTitle(plan),
  };
}

function planTitle(plan: JsonValue): string {
  const summary = isRecord(plan) && typeof plan.summary === "string" ? plan.summary : null;
  const text = summary ?? (typeof plan === "string" ? plan : "the plan");
  return `Approve: ${text.split("\n")[0].slice(0, 100)}`;
}

/** The plan as presentation blocks: summary, numbered steps, checks and risks when present. */
function planBlocks(plan: JsonValue): PresentationBlock[] {
  if (!isRecord(plan) || !Array.isArray(plan.steps)) {
    return [{ kind: "preformatted", text: promptText(plan, 15_000) }];
  }
  const blocks: PresentationBlock[] = [];
  const steps = plan.steps.slice(0, 200).map((step, i) =>
    `${i + 1}. ${
      isRecord(step) && typeof step.title === "string" ? step.title : promptText(step, 500)
    }`
  );
  blocks.push({ kind: "section", title: "Steps", blocks: [{ kind: "bullets", items: steps }] });
  for (const field of ["verification", "risks"] as const) {
    const list = plan[field];
    if (Array.isArray(list) && list.length > 0) {
      blocks.push({
        kind: "section",
        title: field === "risks" ? "Risks" : "Verification",
        blocks: [{ kind: "bullets", items: list.slice(0, 100).map((v) => promptText(v, 500)) }],
      });
    }
  }
  return blocks;
}

export const planApprovalWorkflow = defineWorkflow<PlanApprovalInput>({
  name: NAME,
  contractId: "pi-workflows.plan-approval.v1",
  title: ({ input }) => input.title,
  input: readInput,
  startAt: "policy",
  nodes: {
    policy: compute({ run: ({ input }) => ({ ask: input.policy !== "skip" }) }),
    approve: humanDecision({
      statusDetail: "waiting for plan approval",
      // The wait has no wall clock of its own: `auto` ends it through onTimeout.
      timeoutMs: null,
      choices: CHOICES,
      request: ({ input }) => ({
        title: input.title,
        subject: input.plan,
        presentation: {
          schema: "pi-workflows.decision-presentation.v1",
          summary: isRecord(input.plan) && typeof input.plan.summary === "string"
            ? input.plan.summary
            : "A plan is ready for review.",
          blocks: [
            ...planBlocks(input.plan),
            ...(input.policy === "auto"
              ? [{
                kind: "paragraph" as const,
                text: `Continues by itself in ${input.autoAfterMinutes} minutes without an answer.`,
              }]
              : []),
          ],
        },
      }),
      onTimeout: ({ input }) =>
        input.policy === "auto"
          ? { afterMs: input.autoAfterMinutes * 60_000, response: { choice: "continue" } }
          : null,
    }),
    continued: compute({
      run: ({ input, outputs }) => ({
        decision: "continue",
        plan: input.plan,
        asked: outputs.approve !== undefined,
      }),
    }),
    stopped: compute({ run: ({ input }) => ({ decision: "stop", plan: input.plan }) }),
    replan: compute({
      run: ({ input, outputs }) => ({
        decision: "replan",
        plan: input.plan,
        feedback: outputs.approve.text,
      }),
    }),
  },
  edges: [
    { from: "policy", switch: { on: "$.ask", cases: { true: "approve", false: "continued" } } },
    humanDecisionEdge({
      from: "approve",
      choices: CHOICES,
      cases: { continue: "continued", stop: "stopped", replan: "replan" },
    }),
  ],
  exits: { continue: { from: "continued" }, stop: { from: "stopped" }, replan: { from: "replan" } },
});

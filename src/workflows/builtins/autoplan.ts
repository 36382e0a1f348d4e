/**
 * `autoplan`: turns a task into a plan someone can carry out. frame (what is asked, what is in
 * scope) -> propose (a few distinct options) -> choose (one in-scope option, or blocked) -> plan
 * (ordered steps with files and checks). Every step reads the project with read-only tools. Exits
 * `ready` (`{status, task, option, plan}`) and `blocked` (`{status, task, reason}`).
 */
import { agent, compute } from "../nodes.ts";
import { defineWorkflow } from "../define-workflow.ts";
import {
  inputRecord,
  isRecord,
  optionalText,
  promptText,
  READ_ONLY_TOOLS,
  requiredText,
  stringList,
} from "./builtin-input.ts";

export interface AutoplanInput {
  task: string;
  /** Extra context or constraints from the caller (a replan's feedback, ...). */
  context: string | null;
}

export interface PlanStep {
  title: string;
  detail: string;
  files: string[];
}

export interface Plan {
  summary: string;
  steps: PlanStep[];
  verification: string[];
  risks: string[];
}

const NAME = "autoplan";

function readInput(raw: unknown): AutoplanInput {
  const input = inputRecord(raw, NAME);
  return { task: requiredText(input, "task", NAME), context: optionalText(input, "context", NAME) };
}

function checkFrame(output: unknown) {
  if (!isRecord(output) || typeof output.goal !== "string" || output.goal.trim() === "") {
    throw new Error(
      'send {"goal": "...", "inScope": [...], "outOfScope": [...], "unknowns": [...]}',
    );
  }
  stringList(output.inScope ?? [], "inScope");
  stringList(output.outOfScope ?? [], "outOfScope");
  stringList(output.unknowns ?? [], "unknowns");
}

function checkOptions(output: unknown) {
  const options = isRecord(output) ? output.options : undefined;
  if (!Array.isArray(options) || options.length === 0 || options.length > 5) {
    throw new Error('send {"options": [{"id": "a", "summary": "...", "inScope": true}]} (1-5)');
  }
  const ids = new Set<string>();
  for (const option of options) {
    if (!isRecord(option) || typeof option.id !== "string" || typeof option.summary !== "string") {
      throw new Error('every option needs "id" and "summary" strings');
    }
    if (typeof option.inScope !== "boolean") {
      throw new Error(`option "${option.id}" needs "inScope": true or false`);
    }
    if (ids.has(option.id)) throw new Error(`option id "${option.id}" appears twice`);
    ids.add(option.id);
  }
}

export function checkPlan(output: unknown): Plan {
  if (!isRecord(output) || typeof output.summary !== "string" || !Array.isArray(output.steps)) {
    throw new Error(
      'send {"summary": "...", "steps": [{"title": "...", "detail": "...", "files": []}], "verification": [...], "risks": [...]}',
    );
  }
  if (output.steps.length === 0) {
    throw new Error('"steps" is empty: a plan needs at least one step');
  }
  const steps = output.steps.map((step, i) => {
    if (!isRecord(step) || typeof step.title !== "string" || step.title.trim() === "") {
      throw new Error(`step ${i + 1} needs a "title"`);
    }
    return {
      title: step.title,
      detail: typeof step.detail === "string" ? step.detail : "",
      files: stringList(step.files ?? [], `steps[${i}].files`),
    };
  });
  return {
    summary: output.summary,
    steps,
    verification: stringList(output.verification ?? [], "verification"),
    risks: stringList(output.risks ?? [], "risks"),
  };
}

const READ_ONLY_NOTE = "Read the project as you need (read, grep, find, ls); change no file.";

export const autoplanWorkflow = defineWorkflow<AutoplanInput>({
  name: NAME,
  contractId: "pi-workflows.autoplan.v1",
  title: ({ input }) => `Plan: ${input.task.slice(0, 80)}`,
  input: readInput,
  startAt: "frame",
  nodes: {
    frame: agent({
      statusDetail: "framing the task",
      tools: READ_ONLY_TOOLS,
      prompt: ({ input }) =>
        `Frame this task before anyone plans it.\n\nTask:\n${input.task}\n` +
        (input.context ? `\nContext from the caller:\n${input.context}\n` : "") +
        `\n${READ_ONLY_NOTE} Say what the goal is, what is in scope and out of scope, and what ` +
        "is still unknown.",
      expectedOutput:
        '{"goal": "...", "inScope": ["..."], "outOfScope": ["..."], "unknowns": ["..."]}',
      validate: checkFrame,
    }),
    propose: agent({
      statusDetail: "proposing options",
      tools: READ_ONLY_TOOLS,
      prompt: ({ input, outputs }) =>
        `Propose 2-4 distinct ways to do this task.\n\nTask:\n${input.task}\n\nFraming:\n${
          promptText(outputs.frame)
        }\n\n${READ_ONLY_NOTE} Mark each option inScope: false when it needs work the framing ` +
        "puts out of scope.",
      expectedOutput:
        '{"options": [{"id": "a", "summary": "...", "inScope": true, "tradeoffs": "..."}]}',
      validate: checkOptions,
    }),
    choose: agent({
      statusDetail: "choosing an option",
      tools: READ_ONLY_TOOLS,
      prompt: ({ input, outputs }) =>
        `Choose the option to plan in detail.\n\nTask:\n${input.task}\n\nOptions:\n${
          promptText(outputs.propose)
        }\n\nPick one option with inScope: true. If none can work, answer blocked with the reason.`,
      expectedOutput:
        '{"status": "chosen", "option": "<option id>", "why": "..."} or {"status": "blocked", "reason": "..."}',
      validate: (output, { outputs }) => {
        if (!isRecord(output)) throw new Error('send {"status": "chosen", "option": "<id>"}');
        if (output.status === "blocked") {
          if (typeof output.reason !== "string" || output.reason.trim() === "") {
            throw new Error('a blocked answer needs "reason"');
          }
          return;
        }
        const options = (outputs.propose as { options: { id: string; inScope: boolean }[] })
          .options;
        const picked = options.find((o) => o.id === output.option);
        if (output.status !== "chosen" || !picked) {
          throw new Error(
            `"status" must be "chosen" with "option" one of ${
              options.map((o) => JSON.stringify(o.id)).join(", ")
            }, or "blocked"`,
          );
        }
        if (!picked.inScope) {
          throw new Error(`option "${picked.id}" is out of scope: choose an in-scope option`);
        }
      },
    }),
    plan: agent({
      statusDetail: "writing the plan",
      tools: READ_ONLY_TOOLS,
      prompt: ({ input, outputs }) => {
        const options = (outputs.propose as { options: { id: string }[] }).options;
        const option = options.find((o) => o.id === outputs.choose.option);
        return `Write the detailed plan for the chosen option.\n\nTask:\n${input.task}\n\n` +
          `Framing:\n${promptText(outputs.frame)}\n\nChosen option:\n${promptText(option)}\n\n` +
          `${READ_ONLY_NOTE} Give ordered steps naming the files each touches, how to verify ` +
          "the result (commands or checks) and the risks.";
      },
      expectedOutput:
        '{"summary": "...", "steps": [{"title": "...", "detail": "...", "files": ["src/x.ts"]}], "verification": ["npm test"], "risks": ["..."]}',
      validate: (output) => checkPlan(output),
    }),
    ready: compute({
      run: ({ input, outputs }) => {
        const options = (outputs.propose as { options: { id: string }[] }).options;
        return {
          status: "ready",
          task: input.task,
          option: options.find((o) => o.id === outputs.choose.option) ?? null,
          plan: outputs.plan,
        };
      },
    }),
    blocked: compute({
      run: ({ input, outputs }) => ({
        status: "blocked",
        task: input.task,
        reason: outputs.choose.reason,
      }),
    }),
  },
  edges: [
    { from: "frame", to: "propose" },
    { from: "propose", to: "choose" },
    { from: "choose", switch: { on: "$.status", cases: { chosen: "plan", blocked: "blocked" } } },
    { from: "plan", to: "ready" },
  ],
  exits: { ready: { from: "ready" }, blocked: { from: "blocked" } },
});

/**
 * The step contract of a model step, shared by interactive (origin Pi session) and headless
 * (`pi --mode rpc`) execution: the step message (the node prompt, then a contract block with the
 * workflow, step and attempt ids, the expected output and the exact JSON arguments of the
 * `workflow` tool's `submit` and `update` calls), the reminder text, the check that a tool call
 * names the pending step and attempt, and the texts a tool result shows the model.
 *
 * Everything here is pure: the host may call it (reminders) without loading workflow code. The
 * wire shape of a contract, and the checks the state layer needs too (target, no submission), are
 * in `src/protocol/step-contract-schema.ts`.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import {
  checkSubmitTarget,
  MAX_STEP_REMINDERS,
  noSubmissionError,
  STEP_CONTRACT_SCHEMA,
  type StepContract,
} from "../protocol/step-contract-schema.ts";
import { NodeFailure } from "./errors.ts";

export {
  checkSubmitTarget,
  MAX_STEP_REMINDERS,
  noSubmissionError,
  STEP_CONTRACT_SCHEMA,
  type StepContract,
};

/** A node prompt longer than this fails the attempt (`promptTooLong`) before it is presented. */
export const MAX_PROMPT_CHARS = 100_000;

export interface StepContractInput {
  kind: "agent" | "assistantMessage";
  /** The node's kind; default `kind` (pass `decision` for a decision node). */
  nodeKind?: "agent" | "decision" | "assistantMessage";
  runId: string;
  workflowName: string;
  nodeId: string;
  attemptId: string;
  prompt: string;
  expectedOutput: string | null;
  statusDetail: string | null;
  deadlineAt: number | null;
}

/** Builds the contract with its message text. Throws `NodeFailure` for an oversized prompt. */
export function buildStepContract(input: StepContractInput): StepContract {
  if (input.prompt.length > MAX_PROMPT_CHARS) {
    throw new NodeFailure(
      "promptTooLong",
      `The prompt of step "${input.nodeId}" is ${input.prompt.length} characters; the limit is ${MAX_PROMPT_CHARS}`,
    );
  }
  const contract: Omit<StepContract, "message"> = {
    schema: STEP_CONTRACT_SCHEMA,
    kind: input.kind,
    nodeKind: input.nodeKind ?? input.kind,
    runId: input.runId,
    workflowName: input.workflowName,
    step: input.nodeId,
    attempt: input.attemptId,
    statusDetail: input.statusDetail,
    expectedOutput: input.expectedOutput,
    deadlineAt: input.deadlineAt,
  };
  const prompt = input.prompt.trim().length > 0 ? input.prompt.trimEnd() : "(no prompt)";
  return { ...contract, message: `${prompt}\n\n---\n${contractBlock(contract)}` };
}

/** The exact arguments of the `workflow` tool call that submits `output` for this step. */
export function submitArguments(
  contract: Pick<StepContract, "step" | "attempt">,
  output: JsonValue,
): { action: "submit"; step: string; attempt: string; output: JsonValue } {
  return { action: "submit", step: contract.step, attempt: contract.attempt, output };
}

/** The exact arguments of the `workflow` tool call that reports progress for this step. */
export function updateArguments(
  contract: Pick<StepContract, "step" | "attempt">,
  update: { type: string; key: string; data: JsonValue },
): {
  action: "update";
  step: string;
  attempt: string;
  update: { type: string; key: string; data: JsonValue };
} {
  return { action: "update", step: contract.step, attempt: contract.attempt, update };
}

/**
 * The contract block: ids, the expected output, the exact submit and update lines. Both lines are the real JSON serialization of the arguments (ids escaped), so a model
 * or a test can copy them; the submit line carries `null` (or a text marker for an assistant
 * message) where the result goes.
 */
export function contractBlock(contract: Omit<StepContract, "message">): string {
  const submitLine = JSON.stringify(
    submitArguments(
      contract,
      contract.kind === "assistantMessage" ? { text: "<your message>" } : null,
    ),
  );
  const updateLine = JSON.stringify(updateArguments(contract, {
    type: "status",
    key: "note",
    data: { message: "<what you are doing>" },
  }));
  const lines = [
    `Workflow step contract (pi-workflows): workflow "${contract.workflowName}", run ${contract.runId}`,
    `Step: ${contract.step}`,
    `Attempt: ${contract.attempt}`,
  ];
  if (contract.kind === "assistantMessage") {
    lines.push(
      "Expected output: the message for the user, as visible reply text.",
      "",
      "Write the message as your normal reply, then call the `workflow` tool once with exactly " +
        'these arguments, putting the same text in "output":',
      submitLine,
    );
  } else {
    lines.push(
      `Expected output: ${contract.expectedOutput ?? "a JSON object with your result"}`,
      "",
      "When done, call the `workflow` tool once with exactly these arguments, your result as " +
        'JSON in place of the null "output":',
      submitLine,
    );
  }
  // No rules for after the verdict: the tool's result says what to do then (`acceptedText`,
  // `rejectedText`), and this block is in the model's context once per step, for the session.
  lines.push("", "Optionally report progress before that with:", updateLine);
  return lines.join("\n");
}

/**
 * The message re-presented when the agent settled without submitting (`reminder` is 1-based, at
 * most MAX_STEP_REMINDERS).
 */
export function reminderMessage(contract: StepContract, reminder: number): string {
  const { message: _message, ...rest } = contract;
  return [
    `Reminder ${reminder} of ${MAX_STEP_REMINDERS}: workflow step "${contract.step}" is still ` +
    "waiting for its submission. Your turn ended without calling the `workflow` tool's " +
    "submit action. Finish the step described earlier and submit it now; after " +
    `${MAX_STEP_REMINDERS} reminders the step fails.`,
    "",
    "---",
    contractBlock(rest),
  ].join("\n");
}

/** The tool result text after an accepted submission. */
export function acceptedText(contract: Pick<StepContract, "step">, nextFollows = false): string {
  return `Output accepted for step ${JSON.stringify(contract.step)}. ${
    nextFollows ? "The next workflow step follows: do it now." : "End your turn now."
  }`;
}

/** The tool result text after a rejected submission (`message` is the node's actionable error). */
export function rejectedText(
  contract: Pick<StepContract, "step" | "attempt">,
  message: string,
): string {
  return `${message}\nFix the output and submit again with step ${
    JSON.stringify(contract.step)
  } and attempt ${JSON.stringify(contract.attempt)}.`;
}

/**
 * The attempt ids on the `Attempt:` lines of a step message or reminder, in order. The contract
 * block ends the message, so its line is the last: a prompt or input before it may hold such a
 * line too.
 */
export function attemptLines(text: string): string[] {
  return [...text.matchAll(/^Attempt: (\S+)$/gm)].map((match) => match[1]);
}

import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { StepContractSchema } from "../../src/protocol/step-contract-schema.ts";
import {
  acceptedText,
  buildStepContract,
  checkSubmitTarget,
  MAX_PROMPT_CHARS,
  MAX_STEP_REMINDERS,
  noSubmissionError,
  rejectedText,
  reminderMessage,
  submitArguments,
  updateArguments,
} from "../../src/workflows/step-contract.ts";

const base = {
  kind: "agent" as const,
  nodeKind: "agent" as const,
  runId: "run-1",
  workflowName: "two-turn-agent",
  nodeId: "draft",
  attemptId: "att-42",
  prompt: "Write a plan for: tests",
  expectedOutput: '{ "steps": ["..."] }',
  statusDetail: "draft a plan",
  deadlineAt: 1_000,
};

/** The JSON line of the message that starts with `{"action":"<action>"`. */
function line(message: string, action: string): string {
  const found = message.split("\n").find((l) => l.startsWith(`{"action":"${action}"`));
  if (!found) throw new Error(`no ${action} line`);
  return found;
}

describe("step contract", () => {
  it("puts the prompt first, then the contract block with ids, output and exact calls", () => {
    const contract = buildStepContract(base);
    expect(v.safeParse(StepContractSchema, contract).success).toBe(true);
    expect(contract).toMatchObject({ step: "draft", attempt: "att-42", runId: "run-1" });
    const [prompt, block] = contract.message.split("\n\n---\n");
    expect(prompt).toBe("Write a plan for: tests");
    expect(block).toContain('workflow "two-turn-agent", run run-1');
    expect(block).toContain("Step: draft\nAttempt: att-42");
    expect(block).toContain('Expected output: { "steps": ["..."] }');
    const submit = line(contract.message, "submit");
    expect(submit).toBe('{"action":"submit","step":"draft","attempt":"att-42","output":null}');
    // The line is the exact JSON of the submit arguments, output left to the model.
    expect(JSON.parse(submit)).toEqual(submitArguments(contract, null));
    expect(JSON.parse(line(contract.message, "update"))).toEqual(
      updateArguments(contract, {
        type: "status",
        key: "note",
        data: { message: "<what you are doing>" },
      }),
    );
  });

  it("leaves what follows a verdict to the tool's result: the block is in the context once per step", () => {
    // A step of the interaction bench (uuid ids): its message stays in the model's context for
    // the rest of the session, so it carries what the step needs and nothing the tool says anyway.
    const contract = buildStepContract({
      ...base,
      runId: "run-ca137557-fa0f-49e9-88c9-2dfa88f3131a",
      workflowName: "bench-chain",
      nodeId: "s1",
      attemptId: "4b62a5b9-2916-46fd-813a-a75e739f8a1a",
      prompt: "Bench step 1: answer ok.",
      expectedOutput: null,
    });
    expect(contract.message).not.toMatch(/reject|end your turn/i);
    expect(contract.message.length).toBeLessThanOrEqual(700);
    expect(acceptedText(contract)).toContain("End your turn now.");
    expect(acceptedText(contract, true)).toContain("The next workflow step follows");
    expect(rejectedText(contract, "Output rejected: no steps")).toContain(
      'Fix the output and submit again with step "s1" and attempt "4b62a5b9-2916-46fd-813a-a75e739f8a1a".',
    );
  });

  it("escapes ids as JSON and falls back to a generic expected output", () => {
    const contract = buildStepContract({
      ...base,
      nodeId: 'mount/say "hi"',
      expectedOutput: null,
    });
    const submit = line(contract.message, "submit");
    expect(JSON.parse(submit)).toMatchObject({ step: 'mount/say "hi"' });
    expect(contract.message).toContain("Expected output: a JSON object with your result");
  });

  it("asks an assistant-message step for a visible reply and the same text", () => {
    const contract = buildStepContract({
      ...base,
      kind: "assistantMessage",
      nodeKind: "assistantMessage",
      expectedOutput: null,
    });
    expect(contract.message).toContain("visible reply");
    const submit = line(contract.message, "submit");
    expect(JSON.parse(submit)).toEqual(submitArguments(contract, { text: "<your message>" }));
  });

  it("refuses an oversized prompt with a stable code", () => {
    expect(() => buildStepContract({ ...base, prompt: "x".repeat(MAX_PROMPT_CHARS + 1) }))
      .toThrow(expect.objectContaining({ code: "promptTooLong" }));
  });

  it("reminds with the count and the same contract, then fails with noSubmission", () => {
    const contract = buildStepContract(base);
    const text = reminderMessage(contract, 1);
    expect(text).toMatch(new RegExp(`^Reminder 1 of ${MAX_STEP_REMINDERS}: workflow step "draft"`));
    expect(line(text, "submit")).toBe(line(contract.message, "submit"));
    expect(text).not.toContain("Write a plan");
    expect(noSubmissionError(contract)).toEqual({
      code: "noSubmission",
      message: expect.stringContaining(`${MAX_STEP_REMINDERS + 1} times`),
    });
  });

  it("checks that a call names the pending step and attempt, saying what to use", () => {
    const contract = buildStepContract(base);
    expect(checkSubmitTarget(contract, { step: "draft", attempt: "att-42" })).toBeNull();
    expect(checkSubmitTarget(contract, { step: "review", attempt: "att-42" })).toEqual({
      code: "wrongStep",
      message: expect.stringContaining('the pending step is "draft" (attempt "att-42")'),
    });
    expect(checkSubmitTarget(contract, { step: "draft", attempt: "old" })).toEqual({
      code: "staleAttempt",
      message: expect.stringContaining('use attempt "att-42"'),
    });
    expect(checkSubmitTarget(contract, { step: "draft" }, "update")).toEqual({
      code: "contractMismatch",
      message: expect.stringMatching(/^Update refused: "step" and "attempt" are required/),
    });
  });

  it("has the tool result texts", () => {
    const contract = buildStepContract(base);
    expect(acceptedText(contract)).toBe('Output accepted for step "draft". End your turn now.');
    expect(rejectedText(contract, "Output rejected: send steps")).toBe(
      'Output rejected: send steps\nFix the output and submit again with step "draft" and attempt "att-42".',
    );
  });
});

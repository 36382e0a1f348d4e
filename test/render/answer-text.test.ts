import { describe, expect, it } from "vitest";
import { answerFromText, AnswerTextError } from "../../src/render/answer-text.ts";
import type { Waiting } from "../../src/protocol/decision-request.ts";

const BASE = {
  since: 0,
  deadlineAt: null,
  default: null,
  decisionId: "d",
  attemptId: "a",
} as const;

const checkpoint: Waiting = {
  ...BASE,
  kind: "checkpoint",
  operation: "checkpoint.answer",
  nodeId: "c",
};
const decision: Waiting = {
  ...BASE,
  kind: "humanDecision",
  operation: "decision.answer",
  nodeId: "approval",
  decision: {
    schema: "pi-workflows.human-decision-request.v1",
    audience: "owner",
    title: "Release?",
    subject: "release",
    revision: 1,
    onTimeout: null,
    presentation: { schema: "pi-workflows.decision-presentation.v1", summary: "s", blocks: [] },
    choices: {
      approve: { label: "Approve the release" },
      reject: {
        label: "Reject with a reason",
        input: { name: "reason", prompt: "Why?", minLength: 0, maxLength: 100 },
      },
    },
  },
};

describe("typed answers", () => {
  it("maps a checkpoint's JSON or text", () => {
    expect(answerFromText(checkpoint, '{"ok": true}')).toEqual({ ok: true });
    expect(answerFromText(checkpoint, "42")).toEqual(42);
    expect(answerFromText(checkpoint, "looks good")).toEqual({ answer: "looks good" });
    expect(() => answerFromText(checkpoint, "{nope")).toThrow(AnswerTextError);
  });

  it("maps a decision's choice name, label, or choice with its text", () => {
    expect(answerFromText(decision, "approve")).toEqual({ choice: "approve" });
    expect(answerFromText(decision, "approve the RELEASE")).toEqual({ choice: "approve" });
    expect(answerFromText(decision, "reject too risky")).toEqual({
      choice: "reject",
      text: "too risky",
    });
    expect(answerFromText(decision, '{"choice":"reject","text":"x"}')).toEqual({
      choice: "reject",
      text: "x",
    });
    // Unknown choices go to the host, which refuses them with its own message.
    expect(answerFromText(decision, "maybe later")).toEqual({ choice: "maybe later" });
    expect(answerFromText(decision, "constructor")).toEqual({ choice: "constructor" });
  });
});

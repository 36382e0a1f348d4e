import { describe, expect, it } from "vitest";
import { decisionText } from "../../src/extension/decision-text.ts";

const BASE = { since: 0, deadlineAt: null, default: null } as const;

describe("waiting-run text", () => {
  it("shows a human decision with its blocks, choices and how a person answers", () => {
    const text = decisionText("run-1", {
      ...BASE,
      operation: "decision.answer",
      kind: "humanDecision",
      decisionId: "dec-1",
      nodeId: "approval",
      attemptId: "att-1",
      default: { at: Date.UTC(2026, 0, 1), answer: { choice: "approve" } },
      decision: {
        schema: "pi-workflows.human-decision-request.v1",
        audience: "owner",
        subject: "release",
        revision: 1,
        onTimeout: null,
        title: "Release 1.0.0?",
        presentation: {
          schema: "pi-workflows.decision-presentation.v1",
          summary: "Approve release 1.0.0",
          blocks: [{ kind: "bullets", items: ["release 1.0.0"] }, {
            kind: "section",
            title: "Risk",
            blocks: [{ kind: "paragraph", text: "low" }],
          }],
        },
        choices: {
          approve: { label: "Approve the release" },
          reject: {
            label: "Reject with a reason",
            input: { name: "reason", prompt: "Why reject?", minLength: 0, maxLength: 100 },
          },
        },
      },
    });
    expect(text.split("\n")).toEqual([
      "Workflow decision: Release 1.0.0?",
      "Approve release 1.0.0",
      "- release 1.0.0",
      "Risk",
      "  low",
      "",
      "Choices:",
      "- approve: Approve the release",
      "- reject: Reject with a reason (add text: Why reject?)",
      'Without an answer by 2026-01-01T00:00:00.000Z the workflow takes "approve".',
      "",
      "A person answers this: /workflow answer run-1 <choice> [text], e.g. /workflow answer approve",
    ]);
  });

  it("shows a checkpoint with the tool call that answers it", () => {
    const text = decisionText("run-2", {
      ...BASE,
      operation: "checkpoint.answer",
      kind: "checkpoint",
      decisionId: "d",
      nodeId: "confirm",
      attemptId: "a",
      request: { summary: "ok?" },
    });
    expect(text).toContain('Request: {"summary":"ok?"}');
    expect(text).toContain('{"action":"answer","runId":"run-2","input":<answer>}');
  });
});

/**
 * `status` of a run waiting at a human decision ends with the exact command to answer it: one
 * per choice (a hint naming only the first choice hid the others and the input they need).
 */
import { describe, expect, it } from "vitest";
import type { Waiting } from "../../src/protocol/decision-request.ts";
import { formatWaiting } from "../../src/cli/format-waiting.ts";

const since = "2026-12-07T09:00:00.000Z";

function decision(choices: Record<string, { label: string; input?: unknown }>): Waiting {
  return {
    kind: "humanDecision",
    operation: "decision.answer",
    decisionId: "dec-1",
    nodeId: "approval",
    attemptId: "att-1",
    since,
    deadlineAt: null,
    default: null,
    decision: {
      schema: "pi-workflows.human-decision-request.v1",
      audience: "owner",
      title: "Release 2.1.0?",
      subject: "release-2.1.0",
      presentation: { schema: "pi-workflows.decision-presentation.v1", summary: "s", blocks: [] },
      revision: 1,
      choices,
      onTimeout: null,
    },
  } as unknown as Waiting;
}

describe("formatWaiting's answer hint", () => {
  it("names every choice of a human decision, each with the input it needs", () => {
    const text = formatWaiting(
      "run-3fbc701b",
      decision({
        approve: { label: "Approve the release" },
        reject: {
          label: "Reject with a reason",
          input: { name: "reason", prompt: "Why reject?", minLength: 1, maxLength: 200 },
        },
        defer: { label: "Later" },
      }),
      Date.parse(since) + 2000,
    );
    const hint = text.split("\n").filter((line) => /^ {2}(answer| {4}or):/.test(line));
    expect(hint).toEqual([
      "  answer: pi-workflows answer run-3fbc701b approval approve",
      "      or: pi-workflows answer run-3fbc701b approval --choice reject --input reason='<text>'",
      "      or: pi-workflows answer run-3fbc701b approval defer",
    ]);
  });

  it("keeps one line for a checkpoint", () => {
    const waiting = { ...decision({}), kind: "checkpoint", decision: undefined } as Waiting;
    const text = formatWaiting("run-3fbc701b", waiting, Date.parse(since));
    expect(text.split("\n").filter((line) => line.includes("pi-workflows answer"))).toEqual([
      "  answer: pi-workflows answer run-3fbc701b approval '<json or text>'",
    ]);
  });
});

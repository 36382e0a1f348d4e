import { describe, expect, it } from "vitest";
import { buildAnswer } from "../../src/cli/answer-input.ts";
import { UsageError } from "../../src/cli/exit-codes.ts";
import { parseCommand } from "../../src/cli/parse-command.ts";
import type { Waiting } from "../../src/protocol/decision-request.ts";

const checkpoint: Waiting = {
  kind: "checkpoint",
  operation: "checkpoint.answer",
  decisionId: "d",
  nodeId: "ask",
  attemptId: "a",
  since: 0,
  deadlineAt: null,
  default: null,
  request: { summary: "ok?" },
};

const decision: Waiting = {
  ...checkpoint,
  kind: "humanDecision",
  operation: "decision.answer",
  request: undefined,
  decision: {
    schema: "pi-workflows.human-decision-request.v1",
    audience: "owner",
    title: "Ship?",
    subject: "s",
    presentation: { schema: "pi-workflows.decision-presentation.v1", summary: "", blocks: [] },
    revision: 1,
    choices: {
      approve: { label: "Approve the release" },
      reject: {
        label: "Reject",
        input: { name: "reason", prompt: "Why?", minLength: 1, maxLength: 10 },
      },
    },
    onTimeout: null,
  },
};

const answer = (waiting: Waiting, ...args: string[]) =>
  buildAnswer(waiting, parseCommand(["answer", "run-1", ...args]) as never);

describe("buildAnswer()", () => {
  it("reads a checkpoint answer as JSON, else as {answer: text}", () => {
    expect(answer(checkpoint, '{"approved": true}')).toEqual({ approved: true });
    expect(answer(checkpoint, "[1, 2]")).toEqual([1, 2]);
    expect(answer(checkpoint, "true")).toBe(true);
    expect(answer(checkpoint, "ship it")).toEqual({ answer: "ship it" });
    expect(() => answer(checkpoint, '{"approved":')).toThrow(/^Invalid JSON answer: /);
    // JSON.parse reads 1e999 as Infinity, which no request can carry: a usage error (exit 2) of
    // one line, bare or inside a value, not the host's refusal.
    const infinite =
      "Invalid JSON answer: a number is too large for JSON (it reads as infinite); " +
      "give a finite number";
    for (const text of ["1e999", " -1e999", '{"a": [1e999]}']) {
      expect(() => answer(checkpoint, text), text).toThrow(UsageError);
      expect(() => answer(checkpoint, text), text).toThrow(infinite);
    }
    expect(() => answer(checkpoint, "--choice", "x")).toThrow(
      /--choice and --input answer a human decision; "ask" is a checkpoint/,
    );
  });

  it("maps a decision answer by name or label, with --choice and --input", () => {
    expect(answer(decision, "approve")).toEqual({ choice: "approve" });
    expect(answer(decision, "APPROVE the release")).toEqual({ choice: "approve" });
    expect(answer(decision, "maybe")).toEqual({ choice: "maybe" }); // the host refuses it
    expect(answer(decision, '{"choice": "reject", "text": "x"}')).toEqual({
      choice: "reject",
      text: "x",
    });
    expect(answer(decision, "--choice", "reject", "--input", "reason=flaky")).toEqual({
      choice: "reject",
      text: "flaky",
    });
    const refused = (...args: string[]) => {
      try {
        answer(decision, ...args);
      } catch (error) {
        expect(error).toBeInstanceOf(UsageError);
        return (error as Error).message;
      }
      throw new Error("expected a usage error");
    };
    expect(refused("--choice", "approve", "--input", "reason=x")).toBe(
      "Choice 'approve' takes no text: leave out --input",
    );
    expect(refused("--choice", "nope", "--input", "reason=x")).toBe(
      "Unknown choice 'nope': use one of approve, reject",
    );
    expect(refused("--choice", "reject", "--input", "a=1", "--input", "b=2")).toContain(
      "Give one --input",
    );
  });
});

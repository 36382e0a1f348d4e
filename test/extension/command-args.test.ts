import { describe, expect, it } from "vitest";
import { CommandArgsError, parseWorkflowArgs } from "../../src/extension/command-args.ts";

describe("/workflow arguments", () => {
  it("parses what 0.12 users type", () => {
    expect(parseWorkflowArgs("")).toEqual({ kind: "list" });
    expect(parseWorkflowArgs("  list ")).toEqual({ kind: "list" });
    expect(parseWorkflowArgs("deploy")).toEqual({ kind: "start", workflow: "deploy", input: {} });
    expect(parseWorkflowArgs("deploy ship it now")).toEqual({
      kind: "start",
      workflow: "deploy",
      input: { task: "ship it now" },
    });
    expect(parseWorkflowArgs('examples/x.workflow.ts --input-json {"a": [1, 2]}')).toEqual({
      kind: "start",
      workflow: "examples/x.workflow.ts",
      input: { a: [1, 2] },
    });
    expect(parseWorkflowArgs("status")).toEqual({ kind: "control", verb: "status", runId: null });
    expect(parseWorkflowArgs("cancel run-abc")).toEqual({
      kind: "control",
      verb: "cancel",
      runId: "run-abc",
    });
    expect(parseWorkflowArgs("answer approve")).toEqual({
      kind: "answer",
      runId: null,
      answer: "approve",
      text: "approve",
    });
    expect(parseWorkflowArgs('answer run-1 {"ok": true}')).toEqual({
      kind: "answer",
      runId: "run-1",
      answer: { ok: true },
      text: '{"ok": true}',
    });
    expect(parseWorkflowArgs("answer reject too risky")).toMatchObject({
      answer: "reject too risky",
    });
  });

  it("refuses bad input with one actionable line", () => {
    const cases: [string, RegExp][] = [
      ["deploy --input-json", /Missing JSON after --input-json/],
      ["deploy --input-json {nope", /Invalid --input-json: /],
      ["deploy words --input-json {}", /Cannot combine --input-json with task text/],
      ["deploy --inputjson {}", /Unknown option --inputjson/],
      ["pause run-1 extra", /Too many arguments for \/workflow pause/],
      ["status abc", /Not a run id: abc/],
      ["answer", /Missing answer/],
      ["answer run-1", /Missing answer for run-1/],
      ["help", /^Usage: \/workflow/],
    ];
    for (const [args, message] of cases) {
      let error: unknown;
      try {
        parseWorkflowArgs(args);
      } catch (e) {
        error = e;
      }
      expect(error, args).toBeInstanceOf(CommandArgsError);
      expect((error as Error).message, args).toMatch(message);
      expect((error as Error).message).not.toContain("\n");
    }
  });
});

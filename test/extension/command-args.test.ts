import { describe, expect, it } from "vitest";
import { CommandArgsError, parseWorkflowArgs } from "../../src/extension/command-args.ts";
import { parseRerunArgs } from "../../src/extension/rerun-args.ts";
import { parseControllerArgs } from "../../src/extension/controller-args.ts";
import { parseScheduleArgs } from "../../src/extension/schedule-args.ts";

/** What `/workflow <line>` parses to, a rerun or retry's options included. */
function parse(line: string) {
  const command = parseWorkflowArgs(line);
  return command.kind === "rerun" ? parseRerunArgs(command.verb, command.args) : command;
}

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

  it("parses rerun, retry and resume --accept-source as the CLI names them", () => {
    const none = {
      kind: "rerun",
      runId: null,
      retry: false,
      from: null,
      visit: null,
      source: null,
    };
    expect(parse("rerun")).toEqual(none);
    expect(parse("retry run-7")).toEqual({ ...none, runId: "run-7", retry: true });
    expect(parse("rerun run-7 --from write/polish --visit 2 --source current")).toEqual({
      ...none,
      runId: "run-7",
      from: "write/polish",
      visit: 2,
      source: "current",
    });
    expect(parse('rerun --source recorded --input-json {"task": "again, shorter"}')).toEqual({
      ...none,
      source: "recorded",
      input: { task: "again, shorter" },
    });
    expect(parse("resume run-7 --accept-source")).toEqual({
      kind: "control",
      verb: "resume",
      runId: "run-7",
      acceptSource: true,
    });
    expect(parse("resume --accept-source")).toMatchObject({ runId: null, acceptSource: true });
  });

  it("refuses bad input with one actionable line", () => {
    const cases: [string, RegExp][] = [
      ["deploy --input-json", /Missing JSON after --input-json/],
      ["deploy --input-json {nope", /Invalid --input-json: /],
      ["deploy words --input-json {}", /Cannot combine --input-json with task text/],
      ["deploy --inputjson {}", /Unknown option --inputjson/],
      ["pause run-1 extra", /Too many arguments for \/workflow pause/],
      ["status abc", /Not a run id: abc/],
      ["pause --accept-source", /Unknown option --accept-source for \/workflow pause$/],
      [
        "resume --force",
        /Unknown option --force for \/workflow resume \(it takes --accept-source\)/,
      ],
      ["rerun abc", /Not a run id: abc/],
      ["rerun --from", /Missing value after --from/],
      ["rerun --from a run-1", /Unexpected argument run-1/],
      ["rerun --visit 2", /--visit needs --from/],
      ["rerun --from a --visit 0", /Invalid --visit '0'/],
      ["rerun --source newest", /Invalid --source 'newest': use current or recorded/],
      ["rerun --input-json", /Missing JSON after --input-json/],
      ["rerun --input-json {nope", /Invalid --input-json: /],
      ["rerun --fast", /Unknown option --fast: Usage: \/workflow rerun/],
      ["rerun --model gpt", /pi-workflows rerun <runId> --model <value>/],
      ["rerun -- --verbose", /pi-workflows rerun <runId> -- <pi args>/],
      ["retry run-1 --from a", /\/workflow retry takes only a run id/],
      ["retry --input-json {}", /--input-json is for \/workflow rerun/],
      ["answer", /Missing answer/],
      ["answer run-1", /Missing answer for run-1/],
      ["help", /^Usage: \/workflow/],
    ];
    for (const [args, message] of cases) {
      let error: unknown;
      try {
        parse(args);
      } catch (e) {
        error = e;
      }
      expect(error, args).toBeInstanceOf(CommandArgsError);
      expect((error as Error).message, args).toMatch(message);
      expect((error as Error).message).not.toContain("\n");
    }
  });

  it("refuses JSON nested past 200 levels in every command that takes JSON", () => {
    const deep = `${"[".repeat(201)}${"]".repeat(201)}`;
    const tooDeep = /: nested deeper than 200 arrays or objects; send a flatter value/;
    const cases: [() => unknown, RegExp][] = [
      [() => parse(`deploy --input-json ${deep}`), /^Invalid --input-json: nested deeper/],
      [() => parse(`rerun --input-json ${deep}`), /^Invalid --input-json: nested deeper/],
      // An answer is JSON or text: JSON too deep is refused, not sent on as a string.
      [() => parse(`answer run-1 ${deep}`), /^Invalid answer: nested deeper/],
      [() => parse(`answer ${deep}`), /^Invalid answer: nested deeper/],
      [() => parseControllerArgs(`apply c k ${deep}`), /^Invalid spec JSON: nested deeper/],
      [
        () => parseControllerArgs(`reconcile c k --effect e --applied ${deep}`),
        /^Invalid receipt JSON: nested deeper/,
      ],
      [
        () => parseScheduleArgs(`add x y --every 1h --input-json ${deep}`),
        /^Invalid --input-json: nested deeper/,
      ],
    ];
    for (const [run, message] of cases) {
      expect(run).toThrow(CommandArgsError);
      expect(run).toThrow(message);
      expect(run).toThrow(tooDeep);
    }
    // A number JSON.parse reads as infinite is refused the same way, bare or inside a value.
    for (const text of ["answer run-1 1e999", 'answer {"a":1e999}', "answer run-1 [-1e999]"]) {
      expect(() => parse(text), text).toThrow(CommandArgsError);
      expect(() => parse(text), text).toThrow(
        /^Invalid answer: a number is too large for JSON \(it reads as infinite\); give a finite number$/,
      );
    }
    // 200 levels are taken.
    const atLimit = `${"[".repeat(200)}${"]".repeat(200)}`;
    expect(parse(`answer run-1 ${atLimit}`)).toMatchObject({ kind: "answer", runId: "run-1" });
  });
});

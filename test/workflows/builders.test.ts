import { describe, expect, it } from "vitest";
import {
  action,
  agent,
  assistantMessage,
  checkpoint,
  choice,
  compute,
  decision,
  decisionEdge,
  defineHumanChoices,
  defineWorkflow,
  defineWorkflowRegistry,
  humanDecision,
  humanDecisionEdge,
  includedResult,
  includeWorkflow,
  isWorkflowDefinition,
  notify,
  shell,
  textInput,
} from "../../mod.ts";

const one = { a: compute({ run: () => 1 }) };

describe("node builders", () => {
  it("agent(), compute(), assistantMessage() set their kind and keep options", () => {
    const validate = () => {};
    expect(agent({ prompt: "p", expectedOutput: "{}", validate, timeoutMs: 5 })).toMatchObject({
      kind: "agent",
      prompt: "p",
      expectedOutput: "{}",
      validate,
      timeoutMs: 5,
    });
    expect(compute({ run: () => 1, statusDetail: "x" })).toMatchObject({
      kind: "compute",
      statusDetail: "x",
    });
    expect(assistantMessage({ prompt: "hi" }).kind).toBe("assistantMessage");
  });

  it("action() is a function action with run and a shell node with exec", () => {
    expect(action({ run: () => 1 }).kind).toBe("action");
    expect(action({ exec: () => ({ command: "true" }) }).kind).toBe("shell");
    expect(shell({ exec: () => ({ command: "true" }), parse: (r) => r.exitCode }).kind).toBe(
      "shell",
    );
  });

  it("checkpoint() and notify() default their options", () => {
    expect(checkpoint()).toEqual({ kind: "checkpoint" });
    expect(notify({ message: "m" })).toEqual({
      kind: "notify",
      message: "m",
      notifyKind: "progress",
    });
    expect(notify({ message: "m", kind: "final" }).notifyKind).toBe("final");
  });

  it("decision() defaults the field to route and rejects empty or duplicate choices", () => {
    expect(decision({ question: "q", choices: ["a", "b"] })).toMatchObject({
      kind: "decision",
      field: "route",
      choices: ["a", "b"],
    });
    expect(() => decision({ question: "q", choices: [] })).toThrow(/choices are empty/);
    expect(() => decision({ question: "q", choices: ["a", "a"] })).toThrow(/duplicate choice "a"/);
  });

  it("decisionEdge() is exhaustive: missing and unknown cases are errors", () => {
    expect(decisionEdge({ from: "d", choices: ["a", "b"], cases: { a: "x", b: "y" } })).toEqual({
      from: "d",
      switch: { on: "$.route", cases: { a: "x", b: "y" } },
    });
    expect(() => decisionEdge({ from: "d", choices: ["a", "b"], cases: { a: "x" } as never }))
      .toThrow(/no case for choice "b"/);
    expect(() => decisionEdge({ from: "d", choices: ["a"], cases: { a: "x", z: "y" } as never }))
      .toThrow(/case "z" is not a choice/);
  });

  it("human decision helpers build choices, text inputs and an exhaustive edge", () => {
    const choices = defineHumanChoices({
      yes: choice({ label: "Yes" }),
      no: choice({ label: "No", input: textInput({ name: "why", prompt: "Why?" }) }),
    });
    expect(choices.no.input).toEqual({
      name: "why",
      prompt: "Why?",
      minLength: 1,
      maxLength: 4000,
    });
    const node = humanDecision({
      choices,
      request: () => ({
        title: "t",
        subject: "s",
        presentation: { schema: "pi-workflows.decision-presentation.v1", summary: "", blocks: [] },
      }),
      onTimeout: { afterMs: 1000, response: { choice: "yes" } },
    });
    expect(node).toMatchObject({ kind: "humanDecision", audience: "owner" });
    expect(humanDecisionEdge({ from: "h", choices, cases: { yes: "a", no: "b" } }).switch.on).toBe(
      "$.choice",
    );
    expect(() => humanDecisionEdge({ from: "h", choices, cases: { yes: "a" } as never })).toThrow(
      /no case for choice "no"/,
    );
    expect(() =>
      humanDecision({
        choices,
        request: () => ({ title: "", subject: "", presentation: {} as never }),
        onTimeout: { afterMs: 1, response: { choice: "maybe" } },
      })
    ).toThrow(/onTimeout response: choice must be one of yes, no/);
    expect(() => defineHumanChoices({})).toThrow(/none given/);
  });

  it("includeWorkflow() and includedResult() wrap and narrow a mount", () => {
    const child = defineWorkflow({
      name: "c",
      startAt: "a",
      nodes: one,
      exits: { done: { from: "a" } },
    });
    expect(includeWorkflow(child, { input: 1 })).toEqual({
      __piwInclude: true,
      workflow: child,
      input: 1,
    });
    expect(includedResult(child, { exit: "done", output: 3 })).toEqual({ exit: "done", output: 3 });
    expect(() => includedResult(child, undefined)).toThrow(/has not exited yet/);
  });
});

describe("defineWorkflow()", () => {
  it("brands and freezes a valid definition", () => {
    const def = defineWorkflow({ name: "ok", startAt: "a", nodes: one });
    expect(isWorkflowDefinition(def)).toBe(true);
    expect(Object.isFrozen(def)).toBe(true);
    expect(isWorkflowDefinition({ name: "ok" })).toBe(false);
  });

  const bad: [string, Record<string, unknown>, RegExp][] = [
    ["a reserved name", { name: "status" }, /name: the name is reserved/],
    ["a bad name", { name: "has space" }, /name: expected letters/],
    ["a bad node id", { nodes: { "1x": compute({ run: () => 1 }) } }, /node ids must match/],
    [
      "the reserved prefix",
      { nodes: { __piw_x: compute({ run: () => 1 }) } },
      /__piw_ prefix is reserved/,
    ],
    ["a missing run function", { nodes: { a: { kind: "compute" } } }, /nodes\.a\.run: is missing/],
    [
      "a non-function validate",
      { nodes: { a: { kind: "agent", prompt: "p", validate: 3 } } },
      /validate: expected a function/,
    ],
    ["an unknown node kind", { nodes: { a: { kind: "weird" } } }, /expected a node built with/],
    ["a negative timeout", { nodes: { a: compute({ run: () => 1, timeoutMs: -1 }) } }, /timeoutMs/],
    [
      "a statusDetail of two lines",
      { nodes: { a: compute({ run: () => 1, statusDetail: "copy\nfiles" }) } },
      /statusDetail: expected one line without control characters/,
    ],
    [
      "a bad switch path",
      { edges: [{ from: "a", switch: { on: "output.x", cases: {} } }] },
      /switch\.on: expected \$\.path/,
    ],
    [
      "an edge with extra keys",
      { edges: [{ from: "a", to: "a", when: 1 }] },
      /expected \{from, to\}/,
    ],
    ["a zero maxSteps", { maxSteps: 0 }, /maxSteps/],
    ["a non-include entry", { includes: { x: { workflow: "y" } } }, /includeWorkflow/],
  ];
  for (const [what, patch, message] of bad) {
    it(`rejects ${what} with a one-line error`, () => {
      const spec = { name: "w", startAt: "a", nodes: one, ...patch } as never;
      let error: Error | undefined;
      try {
        defineWorkflow(spec);
      } catch (e) {
        error = e as Error;
      }
      expect(error?.message).toMatch(/^Invalid workflow definition/);
      expect(error?.message).toMatch(message);
      expect(error?.message).not.toContain("\n");
      expect((error as { code?: string }).code).toBe("invalidDefinition");
    });
  }

  it("rejects a mount named like a node and a non-object", () => {
    const child = defineWorkflow({
      name: "c",
      startAt: "a",
      nodes: one,
      exits: { e: { from: "a" } },
    });
    expect(() =>
      defineWorkflow({
        name: "w",
        startAt: "a",
        nodes: one,
        includes: { a: includeWorkflow(child) },
      })
    ).toThrow(/mount "a" has the same name as a node/);
    expect(() => defineWorkflow(null as never)).toThrow(/expected an object/);
  });

  it("defineWorkflowRegistry() rejects duplicates and non-definitions", () => {
    const a = defineWorkflow({ name: "a", startAt: "a", nodes: one });
    expect(Object.keys(defineWorkflowRegistry([a]))).toEqual(["a"]);
    expect(() => defineWorkflowRegistry([a, a])).toThrow(/duplicate workflow name "a"/);
    expect(() => defineWorkflowRegistry([{} as never])).toThrow(/is not from defineWorkflow/);
    // The object form keeps its keys (0.12 files write it so).
    const b = defineWorkflow({ name: "b", startAt: "a", nodes: one });
    const registry = defineWorkflowRegistry({ first: a, second: b });
    expect(registry.second).toBe(b);
    expect(Object.isFrozen(registry)).toBe(true);
    expect(() => defineWorkflowRegistry({ x: a, y: a })).toThrow(/duplicate workflow name "a"/);
    expect(() => defineWorkflowRegistry({ x: 1 as never })).toThrow(/entry x is not from/);
  });
});

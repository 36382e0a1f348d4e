/**
 * The parts of the 0.12 authoring API this engine keeps or changes on purpose, in process:
 * any-JSON decision subjects, `expiresAt` refused by name, async and bounded title callbacks,
 * `contractId` and include contracts, the object form of `includeWorkflow`, fresh include
 * invocations, and `@osolmaz/pi-workflows/builtins` (resolved and pinned by revision).
 */
import { describe, expect, it } from "vitest";
import {
  choice,
  compute,
  defineHumanChoices,
  defineWorkflow,
  humanDecision,
  includedResult,
  includeWorkflow,
} from "../../mod.ts";
import { compileWorkflow, loadWorkflow, resolveWorkflowTitle } from "../../src/workflows/index.ts";
import { builtinExportName } from "../../src/workflows/sources/builtins-api.ts";
import { runWorkflow } from "../support/workflows.ts";
import { tempProjects } from "../support/temp-project.ts";

const { project } = tempProjects("piw-compat-");
const choices = defineHumanChoices({ ok: choice({ label: "OK" }) });
const presentation = {
  schema: "pi-workflows.decision-presentation.v1" as const,
  summary: "s",
  blocks: [],
};

function decisionWorkflow(request: () => unknown) {
  return compileWorkflow(defineWorkflow({
    name: "d",
    startAt: "ask",
    nodes: { ask: humanDecision({ choices, request: request as never }) },
  }));
}

describe("decision requests", () => {
  it("keep any JSON subject, and refuse expiresAt naming onTimeout", async () => {
    const subject = { plan: { steps: ["a", "b"] }, risk: 2, tags: null };
    const waiting = await runWorkflow(
      decisionWorkflow(() => ({ title: "T", subject, presentation })),
    );
    const result = waiting.results[0].result;
    expect(result).toMatchObject({ outcome: "waiting", request: { title: "T", subject } });
    for (
      const bad of [
        { title: "T", subject: 1, presentation, expiresAt: "2030-01-01T00:00:00Z" },
        { title: "T", presentation },
        { title: "", subject: "x", presentation },
      ]
    ) {
      const run = await runWorkflow(decisionWorkflow(() => bad));
      expect(run.last).toMatchObject({ kind: "fail", error: { code: "invalidRequest" } });
    }
    const expired = await runWorkflow(
      decisionWorkflow(() => ({ title: "T", subject: 1, presentation, expiresAt: 1 })),
    );
    expect(expired.last).toMatchObject({
      error: { message: expect.stringContaining("expiresAt is not supported: set onTimeout") },
    });
  });
});

describe("title callbacks", () => {
  const titled = (title: unknown) =>
    compileWorkflow(defineWorkflow({
      name: "t",
      title: title as never,
      startAt: "a",
      nodes: { a: compute({ run: () => null }) },
    }));

  it("may be async, are cut to 200 characters, and refuse the start when they fail", async () => {
    expect(
      await resolveWorkflowTitle(titled(({ input }: any) => Promise.resolve(`for ${input}`)), "x"),
    )
      .toBe("for x");
    expect(await resolveWorkflowTitle(titled(() => "y".repeat(300)), null)).toHaveLength(200);
    expect(await resolveWorkflowTitle(titled(() => undefined), null)).toBeNull();
    // One line: breaks and control characters become a space; the cut keeps surrogate pairs.
    expect(await resolveWorkflowTitle(titled("Ship\n\r\u001b[2J v2 "), null)).toBe("Ship [2J v2");
    expect(await resolveWorkflowTitle(titled(() => "a\u2028b\tc"), null)).toBe("a b c");
    const emoji = await resolveWorkflowTitle(titled(`${"x".repeat(199)}🚀`), null);
    expect(emoji).toBe("x".repeat(199));
    await expect(resolveWorkflowTitle(titled(() => 5), null)).rejects.toThrow(
      'The title callback of workflow "t" returned number, not a string',
    );
    await expect(resolveWorkflowTitle(titled(() => Promise.reject(new Error("no"))), null))
      .rejects.toMatchObject({
        code: "titleFailed",
        message: expect.stringContaining("failed: no"),
      });
    await expect(resolveWorkflowTitle(titled(() => new Promise(() => {})), null, 50)).rejects
      .toThrow('The title callback of workflow "t" did not answer within 50 ms');
  });
});

describe("composition", () => {
  const child = defineWorkflow({
    name: "child",
    contractId: "example.child.v1",
    startAt: "work",
    exits: { done: { from: "work" } },
    nodes: { work: compute({ run: () => ({ ok: true }) }) },
  });

  it("checks an include's contract: contractId, exit names, input presence", () => {
    const parent = (contract: unknown) =>
      defineWorkflow({
        name: "parent",
        startAt: "c",
        includes: { c: includeWorkflow({ workflow: child, contract: contract as never }) },
        nodes: { after: compute({ run: () => null }) },
        edges: [{ from: "c.done", to: "after" }],
      });
    const same = defineWorkflow({ ...child, name: "same" });
    expect(() => compileWorkflow(parent(same))).not.toThrow();
    const other = defineWorkflow({ ...child, name: "other", contractId: "example.child.v2" });
    expect(() => compileWorkflow(parent(other))).toThrow(
      'expected contractId "example.child.v2", got "example.child.v1"',
    );
    const exits = defineWorkflow({
      ...child,
      name: "exits",
      contractId: undefined,
      exits: { done: { from: "work" }, failed: { from: "work" } },
    });
    expect(() => compileWorkflow(parent(exits))).toThrow("expected exits done, failed, got done");
    const parsed = defineWorkflow({ ...child, name: "parsed", input: (v: unknown) => v });
    expect(() => compileWorkflow(parent(parsed))).toThrow(/declares an input parser/);
    expect(() => includeWorkflow({ workflow: child, contract: {} as never })).toThrow(
      "Invalid includeWorkflow: contract must be a definition from defineWorkflow",
    );
    expect(() => includeWorkflow({ workflow: 3 as never })).toThrow(/workflow must be/);
    expect(() => defineWorkflow({ ...child, contractId: "bad id" })).toThrow(/contractId/);
  });

  it("includedResult names a missing exit", () => {
    expect(includedResult(child, { exit: "done", output: 1 })).toEqual({ exit: "done", output: 1 });
    expect(() => includedResult(child, { exit: "gone", output: 1 })).toThrow(
      'Included workflow child has no exit "gone"',
    );
    expect(() => includedResult(child, undefined)).toThrow(/has not exited yet/);
  });

  it("an include input that returns a promise fails the node clearly", async () => {
    const wf = compileWorkflow(defineWorkflow({
      name: "p",
      startAt: "c",
      includes: { c: includeWorkflow(child, { input: () => Promise.resolve({}) }) },
      nodes: { after: compute({ run: () => null }) },
      edges: [{ from: "c.done", to: "after" }],
    }));
    const run = await runWorkflow(wf);
    expect(run.last).toMatchObject({
      kind: "fail",
      error: { code: "includeInputFailed", message: expect.stringContaining("returned a promise") },
    });
  });
});

describe("@osolmaz/pi-workflows/builtins", () => {
  it("names each built-in <camelCase>Workflow", () => {
    expect(builtinExportName("plan-approval")).toBe("planApprovalWorkflow");
    expect(builtinExportName("sanity-check")).toBe("sanityCheckWorkflow");
    expect(builtinExportName("echo")).toBe("echoWorkflow");
  });

  it("resolves in a workflow file, and a re-exported built-in is pinned by its revision", async () => {
    const dir = project({
      "again.workflow.ts":
        `export { echoWorkflow as default } from "@osolmaz/pi-workflows/builtins";\n`,
      "both.workflow.ts": `import { echoWorkflow } from "pi-workflows/builtins";
import { compute, defineWorkflow, isWorkflowDefinition } from "pi-workflows";
export default defineWorkflow({
  name: "both",
  startAt: "a",
  nodes: { a: compute({ run: () => ({ isDefinition: isWorkflowDefinition(echoWorkflow) }) }) },
});
`,
    });
    const again = await loadWorkflow("./again.workflow.ts", { cwd: dir });
    expect(again.workflow.name).toBe("echo");
    expect(again.identity.workflowSource.mounted).toEqual([
      { kind: "builtin", id: "echo", revision: "1" },
    ]);
    const both = await loadWorkflow("./both.workflow.ts", { cwd: dir });
    expect((await runWorkflow(both.workflow)).last).toMatchObject({
      output: { isDefinition: true },
    });
  });
});

describe("the package's builtins entry", () => {
  it("exports the same definitions the loader serves", async () => {
    const { builtinsApi } = await import("../../src/workflows/sources/builtins-api.ts");
    const entry = await import("../../builtins.ts");
    expect(Object.keys(entry).sort()).toEqual(Object.keys(builtinsApi()).sort());
    for (const [name, def] of Object.entries(entry)) expect(builtinsApi()[name]).toBe(def);
  });
});

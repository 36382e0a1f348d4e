/**
 * plan-approval, autodoc and the catalog listing end to end from the CLI, headless with the
 * real Pi and the fake model in a git repository the test makes. plan-approval waits for a
 * person under `required` (the answer's feedback comes out as `replan`), and `skip` never asks.
 * autodoc's update step really edits a doc through Pi's write tool; a step that touches code
 * fails the run. `workflows` lists every source with its tag, and a project file named like a
 * built-in overrides it while `builtin:<id>` still names the built-in.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILTIN_WORKFLOW_INFO } from "../../../src/base/builtin-workflows.ts";
import type { FakeReply } from "../../support/fake-model.ts";
import { submitCall, type SubmitContract } from "../../support/step-responder.ts";
import { type BuiltinEnv, createBuiltinEnv } from "./builtin-env.ts";

const PLAN = {
  summary: "Add a subtract helper",
  steps: [{ title: "Add sub()", detail: "next to sum()", files: ["src/sum.ts"] }],
  verification: ["npm test"],
  risks: [],
};

describe("plan-approval, autodoc and the catalog with the real Pi", () => {
  let h: BuiltinEnv;

  beforeAll(async () => {
    h = await createBuiltinEnv();
  });
  afterAll(async () => {
    await h?.close();
  });

  it("plan-approval required: waits for a person; replan returns the feedback", async () => {
    const { code, run } = await h.start("plan-approval", { plan: PLAN, policy: "required" });
    expect(code).toBe(7);
    expect(run.state).toBe("waiting");
    const shown = await h.cliHere(["status", run.runId]);
    expect(shown.stdout).toContain("Approve: Add a subtract helper");
    expect(shown.stdout).toContain("Add sub()");
    const answered = await h.cliHere([
      "answer",
      run.runId,
      "--choice",
      "replan",
      "--input",
      "feedback=also add multiply",
    ]);
    expect(answered.stderr).toBe("");
    expect(answered.code).toBe(0);
    const done = await h.waitForState(run.runId, "completed");
    expect(done.output).toEqual({ decision: "replan", plan: PLAN, feedback: "also add multiply" });
  });

  it("plan-approval skip continues without asking; a bad policy is refused before a run", async () => {
    const { code, run } = await h.start("plan-approval", { plan: PLAN, policy: "skip" });
    expect(code).toBe(0);
    expect(run.output).toEqual({ decision: "continue", plan: PLAN, asked: false });
    const bad = await h.cli([
      "start",
      "plan-approval",
      "--input-json",
      JSON.stringify({ plan: PLAN, policy: "sometimes" }),
      "--cwd",
      h.sandbox.project,
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('"policy" must be one of auto, required, skip');
  });

  /** The model of an autodoc run: docs/math.md named, written by Pi's write tool, submitted. */
  const autodocModel = (target: string) =>
  (
    request: { lastRole: string; lastToolResult?: string },
    contract: SubmitContract | undefined,
  ): FakeReply | undefined => {
    if (!contract) return undefined;
    const afterTool = request.lastRole === "tool";
    switch (contract.step) {
      case "locate":
        return afterTool
          ? undefined
          : submitCall(contract, { files: ["docs/math.md"], why: "math" });
      case "inspect":
        return afterTool
          ? undefined
          : submitCall(contract, { gaps: [{ file: "docs/math.md", missing: "all" }] });
      case "update":
        if (!afterTool) {
          return {
            kind: "tool",
            name: "write",
            args: { path: target, content: "# Math\n\nPlanned: sub() next to sum().\n" },
          };
        }
        // After the write: submit; after the accepted submission: the default ends the turn.
        if (request.lastToolResult?.startsWith("Output accepted")) return undefined;
        return submitCall(contract, { changed: [target], summary: "recorded the sub() plan" });
    }
    return undefined;
  };

  it("autodoc records the plan in the docs through Pi's write tool", async () => {
    h.decide = autodocModel("docs/math.md");
    const from = h.model.requests.length;
    const { code, run } = await h.start("autodoc", { plan: PLAN });
    expect(code).toBe(0);
    expect(run.output).toEqual({
      status: "documented",
      files: ["docs/math.md"],
      summary: "recorded the sub() plan",
    });
    expect(readFileSync(join(h.sandbox.project, "docs/math.md"), "utf8")).toContain("sub()");
    // The update step had edit tools but no shell; the others only read.
    const tools = h.model.requests.slice(from).map((r) => [...r.toolNames].sort().join(","));
    expect(tools).toContain("edit,find,grep,ls,read,workflow,write");
    expect(tools).toContain("find,grep,ls,read,workflow");
    expect(tools.some((t) => t.includes("bash"))).toBe(false);
    h.git("clean", "-fdq");
  });

  it("autodoc fails a run whose update step changed code", async () => {
    h.decide = autodocModel("src/sub.ts");
    const { code, run } = await h.start("autodoc", { plan: PLAN });
    expect(code).toBe(6);
    expect(run.state).toBe("failed");
    expect(run.error.code).toBe("changedOutsideDocs");
    expect(run.error.message).toContain("src/sub.ts");
    h.git("clean", "-fdq");
  });

  it("workflows lists sources with tags; a project file overrides a built-in by name", async () => {
    h.write(
      ".pi/workflows/echo.workflow.ts",
      `import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({ name: "echo", startAt: "e", nodes: { e: compute({ run: () => "project echo" }) } });
`,
    );
    const listed = await h.cliJson(["workflows", "--cwd", h.sandbox.project]);
    const echo = listed.workflows.find((w: any) => w.name === "echo");
    expect(echo).toMatchObject({ source: "project", overrides: ["builtin"] });
    for (const builtin of BUILTIN_WORKFLOW_INFO.filter((b) => b.id !== "echo")) {
      expect(listed.workflows).toContainEqual({
        name: builtin.id,
        source: "builtin",
        detail: builtin.summary,
        ref: `builtin:${builtin.id}`,
        overrides: [],
      });
    }
    const text = await h.cli(["workflows", "--cwd", h.sandbox.project]);
    expect(text.stdout).toMatch(/^echo +project +\S+echo\.workflow\.ts \(overrides built-in\)$/m);
    expect(text.stdout).toMatch(/^sanity-check +built-in +Reviews the diff/m);

    const byName = await h.start("echo", "hi");
    expect(byName.run.output).toBe("project echo");
    const builtin = await h.start("builtin:echo", "hi");
    expect(builtin.run.output).toEqual({ input: "hi" });
  });
});

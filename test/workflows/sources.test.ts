import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../src/protocol/canonical-json.ts";
import { describe, expect, it } from "vitest";
import {
  compareMountedSources,
  compareSourceIdentity,
  discoverWorkflows,
  loadWorkflow,
  normalizeWorkflowInput,
  resolveWorkflowTitle,
  verifySourceIdentity,
} from "../../src/workflows/index.ts";
import { simple, tempProjects } from "../support/temp-project.ts";

const { project, root } = tempProjects("piw-sources-");

describe("source identity checks", () => {
  it("verifySourceIdentity() hashes without loading and reports changed and missing files", async () => {
    const dir = project({
      "s.workflow.ts": simple("s", "pi-workflows", `import "./dep.ts";`),
      "dep.ts": "export {};",
    });
    const { identity } = await loadWorkflow("./s.workflow.ts", { cwd: dir });
    expect(verifySourceIdentity(identity.workflowSource)).toEqual({ ok: true });
    writeFileSync(join(dir, "dep.ts"), "export const changed = 1;");
    rmSync(join(dir, "s.workflow.ts"));
    expect(verifySourceIdentity(identity.workflowSource)).toEqual({
      ok: false,
      changed: [
        {
          source: join(dir, "s.workflow.ts"),
          reason: "missing",
          recorded: expect.stringMatching(/^sha256:/),
          current: null,
          root: true,
        },
        {
          source: join(dir, "dep.ts"),
          reason: "changed",
          recorded: (identity.workflowSource.mounted.find((m) => m.kind !== "builtin") as {
            hash: string;
          }).hash,
          current: `sha256:${sha256Hex("export const changed = 1;")}`,
        },
      ],
    });
    expect(
      verifySourceIdentity({ root: { kind: "builtin", id: "echo", revision: "0" }, mounted: [] }),
    ).toEqual({
      ok: false,
      changed: [{ source: "builtin:echo", reason: "revisionChanged", root: true }],
    });
    // The run's own built-in is marked `root` (status offers no --accept-source for it when it
    // is gone); a built-in a project workflow mounted is not.
    const gone = { kind: "builtin" as const, id: "gone", revision: "1" };
    expect(verifySourceIdentity({ root: gone, mounted: [] })).toEqual({
      ok: false,
      changed: [{ source: "builtin:gone", reason: "unknownBuiltin", root: true }],
    });
    writeFileSync(join(dir, "s.workflow.ts"), "restored");
    const file = {
      kind: "file" as const,
      path: join(dir, "s.workflow.ts"),
      hash: `sha256:${sha256Hex("restored")}`,
    };
    expect(verifySourceIdentity({ root: file, mounted: [gone] })).toEqual({
      ok: false,
      changed: [{ source: "builtin:gone", reason: "unknownBuiltin" }],
    });
  });

  it("compareSourceIdentity() also compares the root", () => {
    const file = (path: string, c: string) => ({
      kind: "file" as const,
      path,
      hash: `sha256:${c.repeat(64)}`,
    });
    const saved = { root: file("/x/w.ts", "a"), mounted: [file("/x/h.ts", "b")] };
    expect(compareSourceIdentity(saved, structuredClone(saved))).toEqual({ ok: true });
    expect(compareSourceIdentity(saved, { ...saved, root: file("/x/w.ts", "c") })).toEqual({
      ok: false,
      changed: [{ source: "/x/w.ts", reason: "changed" }],
    });
    const builtin = { root: { kind: "builtin" as const, id: "echo", revision: "1" }, mounted: [] };
    expect(compareSourceIdentity(builtin, { ...builtin, root: { ...builtin.root, revision: "2" } }))
      .toEqual({ ok: false, changed: [{ source: "builtin:echo", reason: "revisionChanged" }] });
  });

  it("compareMountedSources() reports added and removed files", () => {
    const a = { kind: "file" as const, path: "/x/a.ts", hash: `sha256:${"a".repeat(64)}` };
    const b = { kind: "file" as const, path: "/x/b.ts", hash: `sha256:${"b".repeat(64)}` };
    expect(compareMountedSources([a, b], [b, a])).toEqual({ ok: true });
    expect(compareMountedSources([a], [b])).toEqual({
      ok: false,
      changed: [{ source: "/x/b.ts", reason: "added" }, { source: "/x/a.ts", reason: "removed" }],
    });
  });
});

describe("discovery and input", () => {
  it("prefers project over user over built-in, by file stem", () => {
    const dir = project({
      ".pi/workflows/echo.workflow.ts": simple("echo"),
      ".pi/workflows/only-project.workflow.mjs": "",
      ".pi/workflows/notes.md": "",
      "agent/workflows/echo.workflow.ts": simple("echo"),
      "agent/workflows/user-one.workflow.ts": simple("user-one"),
    });
    const found = discoverWorkflows({ cwd: dir, agentDir: join(dir, "agent") });
    expect(found.map((w) => [w.name, w.origin])).toEqual([
      ["echo", "project"],
      ["only-project", "project"],
      ["user-one", "user"],
      ["autoplan", "builtin"],
      ["plan-approval", "builtin"],
      ["autodoc", "builtin"],
      ["sanity-check", "builtin"],
      ["monitor", "builtin"],
      ["autoimplement", "builtin"],
    ]);
    const noProject = discoverWorkflows({ cwd: join(dir, "agent"), agentDir: join(root, "none") });
    expect(noProject.find((w) => w.name === "echo")?.origin).toBe("builtin");
  });

  it("loads by name from the user directory", async () => {
    const dir = project({ "agent/workflows/mine.workflow.ts": simple("mine") });
    const { workflow } = await loadWorkflow("mine", { cwd: dir, agentDir: join(dir, "agent") });
    expect(workflow.name).toBe("mine");
  });

  it("normalizeWorkflowInput() runs the parser once and hashes the result", async () => {
    const dir = project({
      "in.workflow.ts": simple("in").replace(
        'startAt: "a",',
        `startAt: "a", title: ({ input }) => "for " + input.who,
  input: (raw: unknown) => { if (typeof raw !== "string") throw new Error("input must be a string"); return { who: raw }; },`,
      ),
    });
    const { workflow } = await loadWorkflow("./in.workflow.ts", { cwd: dir });
    const { input, inputHash } = normalizeWorkflowInput(workflow, "ada");
    expect(input).toEqual({ who: "ada" });
    expect(inputHash).toMatch(/^sha256:/);
    expect(await resolveWorkflowTitle(workflow, input)).toBe("for ada");
    expect(() => normalizeWorkflowInput(workflow, 3)).toThrow(
      'Invalid input for workflow "in": input must be a string',
    );
    expect(() => normalizeWorkflowInput(workflow, undefined)).toThrow(/input must be a string/);
  });

  it("tells which workflows need an origin session or a model", async () => {
    const { compileWorkflow, workflowHasAgentSteps, workflowNeedsOriginSession } = await import(
      "../../src/workflows/index.ts"
    );
    const { agent, assistantMessage, compute, defineWorkflow } = await import("../../mod.ts");
    const make = (node: unknown) =>
      compileWorkflow(defineWorkflow({ name: "n", startAt: "a", nodes: { a: node as never } }));
    const plain = make(compute({ run: () => 1 }));
    const withAgent = make(agent({ prompt: "p" }));
    const withMessage = make(assistantMessage({ prompt: "p" }));
    expect([plain, withAgent, withMessage].map(workflowHasAgentSteps)).toEqual([false, true, true]);
    expect([plain, withAgent, withMessage].map(workflowNeedsOriginSession)).toEqual([
      false,
      false,
      true,
    ]);
  });

  it("refuses an empty reference and a directory path", async () => {
    const { resolveWorkflowRef } = await import("../../src/workflows/index.ts");
    const dir = project({ "flows.workflow.ts/keep": "" });
    expect(() => resolveWorkflowRef(" ", { cwd: dir })).toThrow("Workflow reference is empty");
    expect(() => resolveWorkflowRef("./flows.workflow.ts", { cwd: dir })).toThrow(
      `Workflow path is not a file: ${join(dir, "flows.workflow.ts")}`,
    );
  });
});

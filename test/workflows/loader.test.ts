import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  compareMountedSources,
  decideNext,
  discoverWorkflows,
  loadWorkflow,
  normalizeWorkflowInput,
  resolveWorkflowTitle,
  verifySourceIdentity,
  WorkflowLoadError,
} from "../../src/workflows/index.ts";

const root = mkdtempSync(join(tmpdir(), "piw-loader-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

/** A fresh project dir with the given files. */
function project(files: Record<string, string>): string {
  const dir = join(root, `p${++n}`);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

const sha = (path: string) =>
  `sha256:${createHash("sha256").update(readFileSync(path)).digest("hex")}`;

const simple = (name: string, specifier = "pi-workflows", extra = "") => `
import { compute, defineWorkflow } from "${specifier}";
${extra}
export default defineWorkflow({
  name: "${name}",
  startAt: "a",
  nodes: { a: compute({ run: () => ({ from: "${name}" }) }) },
});
`;

async function loadError(ref: string, cwd: string): Promise<WorkflowLoadError> {
  try {
    await loadWorkflow(ref, { cwd, agentDir: join(cwd, "agent") });
  } catch (error) {
    expect(error).toBeInstanceOf(WorkflowLoadError);
    expect((error as Error).message).not.toContain("\n");
    return error as WorkflowLoadError;
  }
  throw new Error("expected a load error");
}

describe("loadWorkflow() from files", () => {
  it("loads strip-only TypeScript with relative imports and records the source identity", async () => {
    const dir = project({
      "flow.workflow.ts": `
import { compute, defineWorkflow } from "pi-workflows";
import type { Shout } from "./lib/shout.ts";
import { shout } from "./lib/shout.ts";
const s: Shout = shout;
export default defineWorkflow({
  name: "flow",
  startAt: "a",
  nodes: { a: compute({ run: ({ input }) => ({ said: s(String(input)) }) }) },
});`,
      "lib/shout.ts": `import { suffix } from "./suffix.ts";
export type Shout = (x: string) => string;
export const shout: Shout = (x: string): string => x.toUpperCase() + suffix;`,
      "lib/suffix.ts": `export const suffix: string = "!";`,
    });
    const { workflow, identity } = await loadWorkflow("./flow.workflow.ts", { cwd: dir });
    const path = join(dir, "flow.workflow.ts");
    expect(identity.workflowSource).toEqual({
      root: { kind: "file", path, hash: sha(path) },
      mounted: [
        { kind: "file", path: join(dir, "lib/shout.ts"), hash: sha(join(dir, "lib/shout.ts")) },
        { kind: "file", path: join(dir, "lib/suffix.ts"), hash: sha(join(dir, "lib/suffix.ts")) },
      ],
    });
    expect(identity.definitionDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const { executeNode, unavailableAgentExecutor } = await import("../../src/workflows/index.ts");
    const result = await executeNode(workflow, "a", {
      facts: { runId: "r", workflowName: "flow", input: "hey", attempts: [] },
      attemptId: "x",
      signal: new AbortController().signal,
      publishUpdate: () => {},
      agent: unavailableAgentExecutor("none"),
    });
    expect(result).toEqual({ outcome: "ok", output: { said: "HEY!" } });
  });

  it("maps both bare specifiers to the running API, in .ts, .mts, .js and .mjs files", async () => {
    const dir = project({
      "a.workflow.ts": simple("a", "pi-workflows"),
      "b.workflow.mts": simple("b", "@osolmaz/pi-workflows"),
      "c.workflow.mjs": simple("c", "pi-workflows"),
      "d.workflow.js": simple("d", "@osolmaz/pi-workflows"),
      "package.json": `{"type": "module"}`,
    });
    for (const file of ["a.workflow.ts", "b.workflow.mts", "c.workflow.mjs", "d.workflow.js"]) {
      const { workflow } = await loadWorkflow(join(dir, file), { cwd: dir });
      expect(workflow.name).toBe(file[0]);
    }
  });

  it('loads .ts under a "type": "commonjs" package as module TypeScript', async () => {
    const dir = project({
      "package.json": `{"type": "commonjs"}`,
      "cjs.workflow.ts": simple("cjs"),
    });
    const { workflow } = await loadWorkflow(join(dir, "cjs.workflow.ts"), { cwd: dir });
    expect(workflow.name).toBe("cjs");
  });

  it("gives a fresh module instance after a helper file changed", async () => {
    const dir = project({
      "v.workflow.ts": simple(
        "v",
        "pi-workflows",
        `import { version } from "./version.ts";\nexport const seen = version;`,
      )
        .replace('({ from: "v" })', "({ version })"),
      "version.ts": `export const version = 1;`,
    });
    const run = async () => {
      const { workflow, identity } = await loadWorkflow(join(dir, "v.workflow.ts"), { cwd: dir });
      const { executeNode, unavailableAgentExecutor } = await import(
        "../../src/workflows/index.ts"
      );
      const r = await executeNode(workflow, "a", {
        facts: { runId: "r", workflowName: "v", input: null, attempts: [] },
        attemptId: "x",
        signal: new AbortController().signal,
        publishUpdate: () => {},
        agent: unavailableAgentExecutor("none"),
      });
      return { output: (r as { output: unknown }).output, identity };
    };
    const first = await run();
    writeFileSync(join(dir, "version.ts"), `export const version = 2;`);
    const second = await run();
    expect(first.output).toEqual({ version: 1 });
    expect(second.output).toEqual({ version: 2 });
    expect(
      compareMountedSources(
        first.identity.workflowSource.mounted,
        second.identity.workflowSource.mounted,
      ),
    )
      .toEqual({ ok: false, changed: [{ source: join(dir, "version.ts"), reason: "changed" }] });
  });

  it("resolves string includes relative to the including file and mounts their files", async () => {
    const dir = project({
      "parent.workflow.ts": `
import { compute, defineWorkflow, includeWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "parent",
  startAt: "sub",
  includes: { sub: includeWorkflow("./children/child.workflow.ts") },
  nodes: { end: compute({ run: ({ outputs }) => outputs.sub }) },
  edges: [{ from: "sub.done", to: "end" }],
});`,
      "children/child.workflow.ts": `
import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "child",
  startAt: "x",
  nodes: { x: compute({ run: () => 42 }) },
  exits: { done: { from: "x" } },
});`,
    });
    const { workflow, identity } = await loadWorkflow(join(dir, "parent.workflow.ts"), {
      cwd: dir,
    });
    expect([...workflow.nodes.keys()]).toEqual(["end", "sub/x"]);
    expect(identity.workflowSource.mounted).toEqual([
      {
        kind: "file",
        path: join(dir, "children/child.workflow.ts"),
        hash: sha(join(dir, "children/child.workflow.ts")),
      },
    ]);
    expect(decideNext(workflow, { runId: "r", workflowName: "parent", input: null, attempts: [] }))
      .toMatchObject({ nodeId: "sub/x" });
  });

  it("loads a built-in by id with its revision as the root identity", async () => {
    const { workflow, identity } = await loadWorkflow("builtin:echo", { cwd: root });
    expect(workflow.name).toBe("echo");
    expect(identity.workflowSource).toEqual({
      root: { kind: "builtin", id: "echo", revision: "1" },
      mounted: [],
    });
  });
});

describe("loadWorkflow() errors", () => {
  it("missing file and unknown name", async () => {
    const dir = project({});
    expect(await loadError("./nope.workflow.ts", dir)).toMatchObject({
      code: "workflowNotFound",
      message: `Workflow file not found: ${join(dir, "nope.workflow.ts")}`,
    });
    expect((await loadError("nothing-here", dir)).message).toMatch(
      /^Workflow not found: nothing-here: looked in/,
    );
    expect((await loadError("builtin:nope", dir)).message).toBe(
      "Built-in workflow not found: nope",
    );
  });

  it("syntax error, located at file and line", async () => {
    const dir = project({
      "bad.workflow.ts": `import { defineWorkflow } from "pi-workflows";\nconst x: number = ;\n`,
    });
    const error = await loadError("./bad.workflow.ts", dir);
    expect(error.code).toBe("syntaxError");
    expect(error.location).toBe(`${join(dir, "bad.workflow.ts")}:2`);
    expect(error.message).toMatch(
      new RegExp(`^Syntax error in ${join(dir, "bad.workflow.ts")}:2: `),
    );
  });

  it("a syntax error in an imported helper names the helper", async () => {
    const dir = project({
      "h.workflow.ts": simple("h", "pi-workflows", `import "./helper.ts";`),
      "helper.ts": "export const = 1;",
    });
    const error = await loadError("./h.workflow.ts", dir);
    expect(error.code).toBe("syntaxError");
    expect(error.location).toBe(`${join(dir, "helper.ts")}:1`);
  });

  it("unsupported TypeScript says the file must be strip-only", async () => {
    const dir = project({
      "e.workflow.ts": simple("e", "pi-workflows", "\nenum Color { Red }\nexport const c = Color;"),
    });
    const error = await loadError("./e.workflow.ts", dir);
    expect(error.code).toBe("unsupportedTypeScript");
    expect(error.message).toMatch(/enum/);
    expect(error.message).toMatch(/must be strip-only TypeScript/);
    expect(error.location).toBe(`${join(dir, "e.workflow.ts")}:4`);
  });

  it("no default export, and a default export that is not a definition", async () => {
    const dir = project({
      "n.workflow.ts": "export const x = 1;",
      "o.workflow.ts": "export default { name: 'o' };",
    });
    expect(await loadError("./n.workflow.ts", dir)).toMatchObject({ code: "noDefaultExport" });
    expect((await loadError("./n.workflow.ts", dir)).message).toMatch(
      /add "export default defineWorkflow/,
    );
    expect(await loadError("./o.workflow.ts", dir)).toMatchObject({ code: "invalidDefinition" });
  });

  it("invalid definition thrown while the file evaluates, with its location", async () => {
    const dir = project({
      "i.workflow.ts":
        `import { defineWorkflow } from "pi-workflows";\n\nexport default defineWorkflow({ name: "i", startAt: "a", nodes: { "bad id": {} } });\n`,
    });
    const error = await loadError("./i.workflow.ts", dir);
    expect(error.code).toBe("invalidDefinition");
    expect(error.message).toMatch(/^Invalid workflow definition "i": /);
    expect(error.location).toBe(`${join(dir, "i.workflow.ts")}:3`);
  });

  it("invalid graph", async () => {
    const dir = project({
      "g.workflow.ts": simple("g").replace('startAt: "a"', 'startAt: "missing"'),
    });
    const error = await loadError("./g.workflow.ts", dir);
    expect(error.code).toBe("invalidGraph");
    expect(error.message).toMatch(/start node "missing" does not exist/);
  });

  it("source cycles through string includes", async () => {
    const include = (name: string, other: string) => `
import { compute, defineWorkflow, includeWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "${name}",
  startAt: "x",
  includes: { m: includeWorkflow("./${other}.workflow.ts") },
  nodes: { x: compute({ run: () => 1 }) },
  edges: [{ from: "x", to: "m" }],
  exits: { done: { from: "m.done" } },
});`;
    const dir = project({ "a.workflow.ts": include("a", "b"), "b.workflow.ts": include("b", "a") });
    const error = await loadError("./a.workflow.ts", dir);
    expect(error.code).toBe("sourceCycle");
    expect(error.message).toBe(
      `Source cycle in workflow includes: ${join(dir, "a.workflow.ts")} -> ${
        join(dir, "b.workflow.ts")
      } -> ${join(dir, "a.workflow.ts")}`,
    );
  });

  it("a file that throws while loading, located at the throwing line", async () => {
    const dir = project({
      "t.workflow.ts": `import "pi-workflows";\n\nthrow new Error("config missing");\n`,
    });
    const error = await loadError("./t.workflow.ts", dir);
    expect(error.code).toBe("loadFailed");
    expect(error.location).toBe(`${join(dir, "t.workflow.ts")}:3`);
    expect(error.message).toBe(
      `Workflow file failed to load: ${join(dir, "t.workflow.ts")}:3: config missing`,
    );
  });

  it("an import of a missing module", async () => {
    const dir = project({ "m.workflow.ts": simple("m", "pi-workflows", `import "./gone.ts";`) });
    expect(await loadError("./m.workflow.ts", dir)).toMatchObject({ code: "moduleNotFound" });
  });
});

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
        { source: join(dir, "s.workflow.ts"), reason: "missing" },
        { source: join(dir, "dep.ts"), reason: "changed" },
      ],
    });
    expect(
      verifySourceIdentity({ root: { kind: "builtin", id: "echo", revision: "0" }, mounted: [] }),
    ).toEqual({
      ok: false,
      changed: [{ source: "builtin:echo", reason: "revisionChanged" }],
    });
    expect(
      verifySourceIdentity({ root: { kind: "builtin", id: "gone", revision: "1" }, mounted: [] }),
    )
      .toMatchObject({ ok: false, changed: [{ reason: "unknownBuiltin" }] });
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
    expect(resolveWorkflowTitle(workflow, input)).toBe("for ada");
    expect(() => normalizeWorkflowInput(workflow, 3)).toThrow(
      'Invalid input for workflow "in": input must be a string',
    );
    expect(() => normalizeWorkflowInput(workflow, undefined)).toThrow(/input must be a string/);
  });
});

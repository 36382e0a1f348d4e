import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compareMountedSources, decideNext, loadWorkflow } from "../../src/workflows/index.ts";
import { loadError, sha, simple, tempProjects } from "../support/temp-project.ts";

const { project, root } = tempProjects("piw-loader-");

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

  it("hands workflow files the very same API objects the engine uses", async () => {
    const dir = project({
      "same.workflow.ts": simple(
        "same",
        "pi-workflows",
        `import * as api from "@osolmaz/pi-workflows";
import { compute as c2 } from "pi-workflows";
export const same = api.compute === c2 && typeof api.defineWorkflow === "function";`,
      )
        .replace('({ from: "same" })', "({ same })"),
    });
    const { workflow } = await loadWorkflow(join(dir, "same.workflow.ts"), { cwd: dir });
    const { authoringApi } = await import("../../src/workflows/api.ts");
    const node = workflow.nodes.get("a")!.node as unknown as { run: () => unknown };
    expect(node.run()).toEqual({ same: true });
    expect((globalThis as Record<symbol, unknown>)[Symbol.for("pi-workflows.api")]).toBe(
      authoringApi,
    );
    expect((authoringApi as Record<string, unknown>).compute).toBe(
      (await import("../../mod.ts")).compute,
    );
  });

  it("includes a workflow by name from the project directory", async () => {
    const dir = project({
      ".pi/workflows/child.workflow.ts": `
import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({ name: "child", startAt: "x", nodes: { x: compute({ run: () => 1 }) }, exits: { done: { from: "x" } } });`,
      "main.workflow.ts": `
import { compute, defineWorkflow, includeWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "main",
  startAt: "c",
  includes: { c: includeWorkflow("child") },
  nodes: { end: compute({ run: () => 2 }) },
  edges: [{ from: "c.done", to: "end" }],
});`,
    });
    const { workflow, identity } = await loadWorkflow("./main.workflow.ts", {
      cwd: dir,
      agentDir: join(dir, "agent"),
    });
    expect([...workflow.nodes.keys()]).toEqual(["end", "c/x"]);
    expect(identity.workflowSource.mounted).toHaveLength(1);
    const viaBuiltin = project({
      "b.workflow.ts": `
import { defineWorkflow, includeWorkflow } from "pi-workflows";
export default defineWorkflow({ name: "b", startAt: "e", includes: { e: includeWorkflow("builtin:echo") }, nodes: {} });`,
    });
    expect((await loadError("./b.workflow.ts", viaBuiltin)).message).toMatch(
      /"echo" \(mount "e"\) declares no exits/,
    );
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
    // With no close name, the ids there are.
    expect((await loadError("builtin:nope", dir)).message).toBe(
      "Built-in workflow not found: nope; the built-ins are autoplan, plan-approval, autodoc, " +
        "sanity-check, monitor, autoimplement, echo",
    );
  });

  it("suggests the closest name for a typo, never a far one", async () => {
    const dir = project({
      ".pi/workflows/deploy.workflow.ts": simple("deploy", "pi-workflows", ""),
    });
    expect((await loadError("deplyo", dir)).message).toMatch(
      /^Workflow not found: deplyo: looked in .*; did you mean deploy\?$/,
    );
    expect((await loadError("builtin:ecoh", dir)).message).toBe(
      "Built-in workflow not found: ecoh; did you mean builtin:echo?",
    );
    expect((await loadError("release", dir)).message).not.toContain("did you mean");
    // A path: the workflow its file name names, else the closest file in its directory.
    expect((await loadError("deploy.workflow.ts", dir)).message).toBe(
      `Workflow file not found: ${
        join(dir, "deploy.workflow.ts")
      }; did you mean the workflow deploy?`,
    );
    expect((await loadError("./.pi/workflows/deplyo.workflow.ts", dir)).message).toBe(
      `Workflow file not found: ${join(dir, ".pi/workflows/deplyo.workflow.ts")}; ` +
        "did you mean the workflow deploy?",
    );
    expect((await loadError("./.pi/workflows/depoly.ts", dir)).message).toBe(
      `Workflow file not found: ${join(dir, ".pi/workflows/depoly.ts")}; ` +
        `did you mean ${join(dir, ".pi/workflows/deploy.workflow.ts")}?`,
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
    expect(error.message).toContain("write an enum as a const object");
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

  it("an import of a sibling without its extension finds the file, as 0.12 did", async () => {
    const dir = project({
      "lib/helpers.ts": "export const here = 1;\n",
      "x.workflow.ts": simple("x", "pi-workflows", `import { here } from "./lib/helpers";`),
    });
    const loaded = await loadWorkflow("./x.workflow.ts", { cwd: dir });
    expect(loaded.identity.workflowSource.mounted).toEqual([
      { kind: "file", path: join(dir, "lib/helpers.ts"), hash: sha(join(dir, "lib/helpers.ts")) },
    ]);
    const folder = project({
      "lib/index.ts": "export const here = 1;\n",
      "y.workflow.ts": simple("y", "pi-workflows", `import { here } from "./lib";`),
    });
    await expect(loadWorkflow("./y.workflow.ts", { cwd: folder })).resolves.toBeDefined();
    const none = project({
      "z.workflow.ts": simple("z", "pi-workflows", `import { here } from "./lib/missing";`),
    });
    expect(await loadError("./z.workflow.ts", none)).toMatchObject({ code: "moduleNotFound" });
  });

  it("an import of a name its module does not export: not a syntax error", async () => {
    const dir = project({
      "lib.ts": "export const here = 1;\n",
      "n.workflow.ts": simple("n", "pi-workflows", `import { gone } from "./lib.ts";`),
    });
    const error = await loadError("./n.workflow.ts", dir);
    expect(error.code).toBe("moduleNotFound");
    expect(error.message).toMatch(
      /^Missing export in .*n\.workflow\.ts:\d+: The requested module '\.\/lib\.ts' does not provide an export named 'gone' \(if gone is a type, import it with "import type"\)$/,
    );
  });
});

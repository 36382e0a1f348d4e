/**
 * Workflow TypeScript files stripped once and saved by the hash of their bytes in Node's compile
 * cache directory (src/workflows/sources/stripped-sources.ts), as the source resolver saves them
 * and a prepared process's fresh instances load them: each load is still a fresh module instance,
 * runs exactly as Node's own strip would (same lines), records the same source identity, and bytes
 * that changed since, or a file Node cannot strip, load through Node as before.
 */
import module from "node:module";
import { readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { executeNode, loadWorkflow, unavailableAgentExecutor } from "../../src/workflows/index.ts";
import {
  saveStripped,
  sealedText,
  strippedModule,
} from "../../src/workflows/sources/stripped-sources.ts";
import { loadError, sha, tempProjects } from "../support/temp-project.ts";

const { project, root: temp } = tempProjects("piw-stripped-");
// What the host gives its children (NODE_COMPILE_CACHE in the state directory).
module.enableCompileCache(join(temp, "compile-cache"));
const savedDir = join(module.getCompileCacheDir()!, "piw-stripped");

const COUNTED = `import { compute, defineWorkflow } from "pi-workflows";
import { label } from "./lib.ts";
const g = globalThis as { __strippedEvaluations?: number };
g.__strippedEvaluations = (g.__strippedEvaluations ?? 0) + 1;
const evaluation: number = g.__strippedEvaluations;
export default defineWorkflow({
  name: "counted",
  startAt: "a",
  nodes: {
    a: compute({
      run: ({ input }: { input: unknown }): unknown =>
        input === "where" ? { where: new Error("here").stack } : { evaluation, label },
    }),
  },
});
`;

async function run(workflow: Awaited<ReturnType<typeof loadWorkflow>>["workflow"], input: string) {
  return await executeNode(workflow, "a", {
    facts: { runId: "r", workflowName: "counted", input, attempts: [] },
    attemptId: "x",
    signal: new AbortController().signal,
    publishUpdate: () => {},
    agent: unavailableAgentExecutor("none"),
  });
}

describe("workflow files stripped once and saved", () => {
  it("serves fresh instances of exactly the saved bytes; anything else loads through Node", async () => {
    const dir = project({
      "counted.workflow.ts": COUNTED,
      "lib.ts": `export const label: string = "one";`,
      "enum.workflow.ts": `enum Color { Red }\nexport default Color;`,
    });
    const root = join(dir, "counted.workflow.ts");
    const lib = join(dir, "lib.ts");
    const first = await loadWorkflow(root, { cwd: dir });
    saveStripped(first.identity.workflowSource);
    expect(readdirSync(savedDir).sort()).toEqual(
      [root, lib].map((path) => `${sha(path).slice("sha256:".length)}.js`).sort(),
    );

    // A text altered without its check line is not served (a torn write, a hand edit).
    const savedLib = join(savedDir, `${sha(lib).slice("sha256:".length)}.js`);
    const text = readFileSync(savedLib, "utf8");
    const js = text.slice(text.indexOf("\n") + 1);
    writeFileSync(savedLib, text.replace('"one"', '"torn"'));
    // Its bytes, read once, go to Node to strip (their hash the identity's).
    const torn = strippedModule(lib, "file:///x")!;
    expect(torn).toEqual({ hash: sha(lib), bytes: readFileSync(lib) });
    // A load is served from what was saved (altered here to tell), for these bytes only.
    writeFileSync(savedLib, sealedText(js.replace('"one"', '"saved"')));
    const url = `${pathToFileURL(root).href}?piw-load=99`;
    const served = strippedModule(root, url) as { hash: string; js: string };
    expect(served.hash).toBe(sha(root));
    expect(served.js).not.toContain(": number");
    expect(served.js.split("\n")).toHaveLength(COUNTED.split("\n").length + 2);
    expect(served.js.endsWith(`\n\n//# sourceURL=${url}`)).toBe(true);

    const second = await loadWorkflow(root, { cwd: dir });
    const third = await loadWorkflow(root, { cwd: dir });
    expect(second.identity).toEqual(first.identity);
    expect(await run(first.workflow, "x")).toMatchObject({
      output: { evaluation: 1, label: "one" },
    });
    expect(await run(second.workflow, "x")).toMatchObject({
      output: { evaluation: 2, label: "saved" },
    });
    expect(await run(third.workflow, "x")).toMatchObject({ output: { evaluation: 3 } });
    // The same line as in the file: stripping blanks types, it moves nothing.
    const where = JSON.stringify(await run(third.workflow, "where"));
    const line = COUNTED.split("\n").findIndex((l) => l.includes(`"where"`)) + 1;
    expect(where).toMatch(new RegExp(`counted\\.workflow\\.ts\\?piw-load=\\d+:${line}:`));

    writeFileSync(lib, `export const label: string = "two";`);
    expect(strippedModule(lib, url)).not.toHaveProperty("js");
    const changed = await loadWorkflow(root, { cwd: dir });
    expect(await run(changed.workflow, "x")).toMatchObject({
      output: { evaluation: 4, label: "two" },
    });
    expect(changed.identity.workflowSource.mounted).toEqual([
      { kind: "file", path: lib, hash: sha(lib) },
    ]);

    // Not strippable: nothing saved, and Node's own load says why, as before.
    const enumFile = join(dir, "enum.workflow.ts");
    saveStripped({ root: { kind: "file", path: enumFile, hash: sha(enumFile) }, mounted: [] });
    expect(strippedModule(enumFile, url)).toEqual({
      hash: sha(enumFile),
      bytes: readFileSync(enumFile),
    });
    expect((await loadError(enumFile, dir)).code).toBe("unsupportedTypeScript");
  });

  it("keeps at most 256 saved texts, the newest", () => {
    const dir = project({ "new.ts": `export const fresh: number = 1;` });
    const file = join(dir, "new.ts");
    for (let i = 0; i < 256; i++) {
      const old = join(savedDir, `old-${i}.js`);
      writeFileSync(old, "");
      utimesSync(old, 1_000 + i, 1_000 + i);
    }
    saveStripped({ root: { kind: "file", path: file, hash: sha(file) }, mounted: [] });
    const names = readdirSync(savedDir);
    expect(names).toHaveLength(256);
    expect(names).toContain(`${sha(file).slice("sha256:".length)}.js`);
    expect(names).not.toContain("old-0.js");
    expect(names).toContain("old-255.js");
  });
});

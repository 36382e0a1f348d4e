/**
 * reusingResolutions (src/host/resolution-cache.ts): the test kit's crash runs repeat one start,
 * and a kept answer serves them only while every file it read is unchanged. The answers here come
 * from the real loader in this process (what the resolver child runs), counted per call.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { ResolveRequest, ResolveResult } from "../../src/host/host-context.ts";
import { reusingResolutions } from "../../src/host/resolution-cache.ts";
import { loadWorkflow } from "../../src/workflows/sources/load-workflow.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "piw-resolution-cache-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A project with a workflow file importing a helper (a mounted source). */
function project(name: string): { dir: string; file: string; helper: string } {
  const dir = join(root, name);
  mkdirSync(join(dir, "lib"), { recursive: true });
  const file = join(dir, "count.workflow.ts");
  const helper = join(dir, "lib", "step.ts");
  writeFileSync(helper, "export const step = 1;\n");
  writeFileSync(
    file,
    [
      'import { compute, defineWorkflow } from "@osolmaz/pi-workflows";',
      'import { step } from "./lib/step.ts";',
      "export default defineWorkflow({",
      '  name: "count", startAt: "a",',
      "  nodes: { a: compute({ run: () => ({ step }) }) },",
      "});",
      "",
    ].join("\n"),
  );
  return { dir, file, helper };
}

/** The real loader's answer, as the resolver child gives it, and how many times it ran. */
function counted() {
  const calls: ResolveRequest[] = [];
  const resolve = async (request: ResolveRequest): Promise<ResolveResult> => {
    calls.push(request);
    try {
      const { workflow, identity } = await loadWorkflow(request.workflow, { cwd: request.cwd });
      return {
        ok: true,
        workflowName: workflow.name,
        title: null,
        workflowSource: identity.workflowSource,
        definitionDigest: identity.definitionDigest,
        definition: workflow.snapshot,
        input: request.input ?? null,
        inputHash: "sha256:0",
        needsInteractive: false,
        needsAgent: false,
      } as ResolveResult;
    } catch (error) {
      return { ok: false, code: "workflowLoadFailed", message: String(error) };
    }
  };
  return { calls, resolve: reusingResolutions(resolve) };
}

describe("reusingResolutions", () => {
  it("reuses an answer for the same start until a file it read changes", async () => {
    const { dir, file, helper } = project("p1");
    const { calls, resolve } = counted();
    const start: ResolveRequest = { workflow: file, input: { n: 1 }, cwd: dir, env: { A: "1" } };
    const first = await resolve(start);
    expect(first.ok).toBe(true);
    expect(await resolve({ ...start })).toEqual(first);
    // The same file by a relative path is another reference; it is kept as well.
    await resolve({ ...start, workflow: "./count.workflow.ts" });
    await resolve({ ...start, workflow: "./count.workflow.ts" });
    expect(calls).toHaveLength(2);

    // Another input, project directory or environment is another start.
    await resolve({ ...start, input: { n: 2 } });
    await resolve({ ...start, env: { A: "2" } });
    const other = project("p2");
    await resolve({ ...start, cwd: other.dir });
    expect(calls).toHaveLength(5);

    // A changed helper (a mounted file), then a changed root: each resolves again, once.
    writeFileSync(helper, "export const step = 2;\n");
    await resolve(start);
    await resolve(start);
    expect(calls).toHaveLength(6);
    writeFileSync(file, `// changed\n${readFileSync(file, "utf8")}`);
    await resolve(start);
    expect(calls).toHaveLength(7);
    // A missing file is never served from the kept answer.
    rmSync(helper);
    const gone = await resolve(start);
    expect(calls).toHaveLength(8);
    expect(gone.ok).toBe(false);
  });

  it("keeps no refusal, no workflow found by name, and answers a copy", async () => {
    const { dir } = project("p3");
    const { calls, resolve } = counted();
    const missing: ResolveRequest = {
      workflow: join(dir, "nope.workflow.ts"),
      input: null,
      cwd: dir,
    };
    await resolve(missing);
    await resolve(missing);
    expect(calls).toHaveLength(2);

    // Found by name in the project's .pi/workflows: a new file could shadow it, so not kept.
    mkdirSync(join(dir, ".pi", "workflows"), { recursive: true });
    writeFileSync(
      join(dir, ".pi", "workflows", "named.workflow.ts"),
      'import { compute, defineWorkflow } from "@osolmaz/pi-workflows";\n' +
        'export default defineWorkflow({ name: "named", startAt: "a", nodes: { a: compute({ run: () => 1 }) } });\n',
    );
    const named: ResolveRequest = { workflow: "named", input: null, cwd: dir };
    expect((await resolve(named)).ok).toBe(true);
    await resolve(named);
    expect(calls).toHaveLength(4);

    const start: ResolveRequest = {
      workflow: join(dir, "count.workflow.ts"),
      input: null,
      cwd: dir,
    };
    const answer = await resolve(start);
    (answer as { workflowName: string }).workflowName = "mutated";
    expect(await resolve(start)).toMatchObject({ workflowName: "count" });
    expect(calls).toHaveLength(5);
  });
});

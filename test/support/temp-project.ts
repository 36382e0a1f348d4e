/** Temp project directories with workflow files, for loader and source tests. */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect } from "vitest";
import { loadWorkflow, WorkflowLoadError } from "../../src/workflows/index.ts";

/** A root temp dir removed after the test file; `project(files)` makes a fresh subdir. */
export function tempProjects(prefix: string): {
  root: string;
  project(files: Record<string, string>): string;
} {
  const root = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  let n = 0;
  return {
    root,
    project(files) {
      const dir = join(root, `p${++n}`);
      mkdirSync(dir, { recursive: true });
      for (const [name, text] of Object.entries(files)) {
        mkdirSync(join(dir, name, ".."), { recursive: true });
        writeFileSync(join(dir, name), text);
      }
      return dir;
    },
  };
}

export const sha = (path: string): string =>
  `sha256:${createHash("sha256").update(readFileSync(path)).digest("hex")}`;

/** A one-node workflow file importing the API through `specifier`. */
export const simple = (name: string, specifier = "pi-workflows", extra = ""): string => `
import { compute, defineWorkflow } from "${specifier}";
${extra}
export default defineWorkflow({
  name: "${name}",
  startAt: "a",
  nodes: { a: compute({ run: () => ({ from: "${name}" }) }) },
});
`;

/** Loads `ref` expecting a one-line WorkflowLoadError. */
export async function loadError(ref: string, cwd: string): Promise<WorkflowLoadError> {
  try {
    await loadWorkflow(ref, { cwd, agentDir: join(cwd, "agent") });
  } catch (error) {
    expect(error).toBeInstanceOf(WorkflowLoadError);
    expect((error as Error).message).not.toContain("\n");
    return error as WorkflowLoadError;
  }
  throw new Error("Expected a load error");
}

/** `npm run pi-workflows -- …` works in the directory the user typed it in (npm's INIT_CWD). */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { npmCallerDir } from "../../src/cli/project-dir.ts";
import { ROOT, runCliProcess, type TempHome, tempHome } from "../support/host.ts";

let home: TempHome;
let project: string;

beforeAll(() => {
  home = tempHome();
  project = join(home.root, "project");
  mkdirSync(join(project, ".pi", "workflows"), { recursive: true });
  writeFileSync(
    join(project, ".pi", "workflows", "callers-own.workflow.ts"),
    `import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({ name: "callers-own", startAt: "a", nodes: { a: compute({ run: () => 1 }) }, edges: [] });
`,
  );
});
afterAll(() => home?.cleanup());

describe("npm run pi-workflows", () => {
  it("takes INIT_CWD only from the pi-workflows script, and only an absolute directory", () => {
    const script = { npm_lifecycle_event: "pi-workflows" };
    expect(npmCallerDir({ ...script, INIT_CWD: ROOT })).toBe(ROOT);
    expect(npmCallerDir({ npm_lifecycle_event: "start", INIT_CWD: ROOT })).toBeNull();
    expect(npmCallerDir({ INIT_CWD: ROOT })).toBeNull();
    expect(npmCallerDir({ ...script, INIT_CWD: "relative/dir" })).toBeNull();
    expect(npmCallerDir({ ...script, INIT_CWD: join(ROOT, "package.json") })).toBeNull();
    expect(npmCallerDir({ ...script, INIT_CWD: join(ROOT, "no-such-dir") })).toBeNull();
    expect(npmCallerDir(script)).toBeNull();
  });

  it("finds the caller's project workflows when run from the package directory", async () => {
    const env = { ...home.env, npm_lifecycle_event: "pi-workflows", INIT_CWD: project };
    const listed = await runCliProcess(["workflows"], env, 30_000, { cwd: ROOT });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain("callers-own");
    const plain = await runCliProcess(
      ["workflows"],
      { ...env, npm_lifecycle_event: "start" },
      30_000,
      {
        cwd: ROOT,
      },
    );
    expect(plain.stdout).not.toContain("callers-own");
  });
});

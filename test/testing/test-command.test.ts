/**
 * `pi-workflows test`: finds `*.workflow.test.ts` files, runs their tests with the kit (no test
 * runner involved: the CLI process is plain Node here) and prints `N passed, N failed`; a failing
 * test shows its message (a missing answer: with the step's prompt), a file that does not load is
 * one failure, and no test file at all is an error.
 */
import { cpSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCliProcess } from "../support/host.ts";
import { removeTempRoot } from "../support/temp-root.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "piw-kit-cli-")));
const env = { ...process.env, PI_WORKFLOWS_STATE_DIR: join(root, "unused-state") };

afterAll(() => removeTempRoot(root));

describe("pi-workflows test", () => {
  it("runs the tests it finds and prints N passed, N failed", async () => {
    const dir = join(root, "project");
    mkdirSync(join(dir, "nested"), { recursive: true });
    mkdirSync(join(dir, "node_modules", "x"), { recursive: true });
    cpSync(
      join(import.meta.dirname, "fixtures", "week-wait.workflow.ts"),
      join(dir, "w.workflow.ts"),
    );
    cpSync(join(import.meta.dirname, "fixtures", "deploy.workflow.ts"), join(dir, "d.workflow.ts"));
    writeFileSync(
      join(dir, "nested", "kit.workflow.test.ts"),
      `import assert from "node:assert/strict";
import { test, testWorkflow } from "@osolmaz/pi-workflows/testing";
test("stops at the checkpoint", async () => {
  const run = await testWorkflow(new URL("../w.workflow.ts", import.meta.url));
  assert.equal(run.waiting.nodeId, "ask");
});
test("a missing answer fails", async () => {
  await testWorkflow(new URL("../d.workflow.ts", import.meta.url));
});
`,
    );
    writeFileSync(join(dir, "broken.workflow.test.ts"), "throw new Error('broken on purpose');\n");
    // Never searched: dependencies.
    writeFileSync(
      join(dir, "node_modules", "x", "dep.workflow.test.ts"),
      "throw new Error('no');\n",
    );
    const result = await runCliProcess(["test"], env, 180_000, { cwd: dir });
    const lines = result.stdout.trim().split("\n");
    expect(result.code, result.stderr).toBe(1);
    expect(lines.at(-1)).toBe("1 passed, 2 failed");
    expect(lines[0]).toMatch(/^✗ broken\.workflow\.test\.ts \(could not load\) \(\d+ ms\)$/);
    expect(lines[1]).toBe("    broken on purpose");
    expect(result.stdout).toMatch(/✓ nested\/kit\.workflow\.test\.ts › stops at the checkpoint/);
    expect(result.stdout).toContain(
      '    testWorkflow: step "review" asked the model, and answers has no "review"',
    );
    expect(result.stdout).toContain("    Check deployment v1 and report.");
  }, 180_000);

  it("says where a test file's syntax error is", async () => {
    const dir = join(root, "syntax");
    mkdirSync(dir);
    writeFileSync(join(dir, "typo.workflow.test.ts"), "const a = 1;\nsyntax error(\n");
    const result = await runCliProcess(["test"], env, 60_000, { cwd: dir });
    expect(result.code, result.stderr).toBe(1);
    const lines = result.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^✗ typo\.workflow\.test\.ts \(could not load\) \(\d+ ms\)$/);
    // The file and line, the source there with a caret under the fault, then what is wrong.
    expect(lines[1]).toBe(`    ${join(dir, "typo.workflow.test.ts")}:2`);
    expect(lines).toContain("    syntax error(");
    expect(lines).toContainEqual(expect.stringMatching(/^ {4}\s*\^+$/));
    expect(result.stdout).toMatch(/ {4}Expected .*\n0 passed, 1 failed\n$/);
  }, 60_000);

  it(
    "keeps a syntax error's place short on a very long line, the caret under the fault",
    async () => {
      const dir = join(root, "minified");
      mkdirSync(dir);
      // One line of 20,000 characters with the fault near its end (a minified file, say).
      const filler = "a=1;".repeat(5_000);
      writeFileSync(join(dir, "long.workflow.test.ts"), `${filler} syntax error(\n`);
      const result = await runCliProcess(["test"], env, 60_000, { cwd: dir });
      expect(result.code, result.stderr).toBe(1);
      const lines = result.stdout.split("\n");
      expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(4 + 202);
      const caret = lines.findIndex((line) => /^ {4}\s*\^+$/.test(line));
      expect(caret).toBeGreaterThan(0);
      const column = lines[caret]!.indexOf("^");
      expect(lines[caret - 1]!.startsWith("    …")).toBe(true);
      expect(lines[caret - 1]!.slice(column)).toMatch(/^(syntax|error|\()/);
      expect(result.stdout.length).toBeLessThan(2_000);
    },
    60_000,
  );

  it("says so when there is no test file", async () => {
    const empty = join(root, "empty");
    mkdirSync(empty);
    const result = await runCliProcess(["test"], env, 30_000, { cwd: empty });
    expect([result.code, result.stderr.trim()]).toEqual([
      1,
      "No *.workflow.test.ts files found in .",
    ]);
    const missing = await runCliProcess(["test", "nope"], env, 30_000, { cwd: empty });
    expect([missing.code, missing.stderr.trim()]).toEqual([
      1,
      "Test file or directory not found: nope",
    ]);
  });
});

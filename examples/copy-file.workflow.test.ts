/** Tests of copy-file.workflow.ts with the test kit (docs/testing.md). */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, testWorkflow } from "@osolmaz/pi-workflows/testing";

const workflow = new URL("./copy-file.workflow.ts", import.meta.url);

test("copies the file for real, through a temporary name", async () => {
  const dir = mkdtempSync(join(tmpdir(), "copy-file-test-"));
  try {
    writeFileSync(join(dir, "a.txt"), "notes\n");
    const run = await testWorkflow(workflow, {
      projectDir: dir,
      input: { from: join(dir, "a.txt"), to: join(dir, "b.txt") },
    });
    assert.deepEqual(run.output, { copied: true });
    assert.equal(readFileSync(join(dir, "b.txt"), "utf8"), "notes\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("refuses a relative path before anything runs", async () => {
  await assert.rejects(
    testWorkflow(workflow, { input: { from: "a.txt", to: "/tmp/b.txt" } }),
    /from: an absolute path/,
  );
});

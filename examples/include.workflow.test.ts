/** Tests of include.workflow.ts with the test kit (docs/testing.md). */
import assert from "node:assert/strict";
import { test, testWorkflow } from "@osolmaz/pi-workflows/testing";

const workflow = new URL("./include.workflow.ts", import.meta.url);

test("short text leaves the review through its approved exit", async () => {
  const run = await testWorkflow(workflow, { input: { text: "ship it" } });
  assert.deepEqual(run.output, {
    published: true,
    exit: "approved",
    output: { text: "ship it" },
  });
  assert.ok("review/inspect" in run.outputs);
});

test("long text is shelved through the rejected exit", async () => {
  const run = await testWorkflow(workflow, { input: { text: "x".repeat(50) } });
  assert.equal(run.output.published, false);
});

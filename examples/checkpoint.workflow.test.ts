/** Tests of checkpoint.workflow.ts with the test kit (docs/testing.md). */
import assert from "node:assert/strict";
import { test, testWorkflow, timeOut } from "@osolmaz/pi-workflows/testing";

const workflow = new URL("./checkpoint.workflow.ts", import.meta.url);

test("waits at the review and says what it asks", async () => {
  const run = await testWorkflow(workflow, { input: { task: "rename the flag" } });
  assert.equal(run.state, "waiting");
  assert.equal(run.waiting?.nodeId, "review");
  assert.deepEqual(run.waiting?.request, { summary: "Approve the plan for rename the flag?" });
});

test("an approval applies the plan", async () => {
  const run = await testWorkflow(workflow, {
    input: { task: "rename the flag" },
    human: { review: { approved: true, note: "go ahead" } },
  });
  assert.deepEqual(run.output, { applied: true, note: "go ahead" });
});

test("an hour without an answer takes the timed_out route, in virtual time", async () => {
  const run = await testWorkflow(workflow, { human: { review: timeOut } });
  assert.deepEqual(run.output, { applied: false, note: "nobody answered within an hour" });
  assert.ok(run.skippedMs > 59 * 60_000);
});

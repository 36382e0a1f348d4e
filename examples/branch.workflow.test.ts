/** Tests of branch.workflow.ts with the test kit (docs/testing.md). */
import assert from "node:assert/strict";
import { test, testWorkflow } from "@osolmaz/pi-workflows/testing";

const branch = new URL("./branch.workflow.ts", import.meta.url);

test("an odd number takes the odd route", async () => {
  const run = await testWorkflow(branch, { input: { n: 7 } });
  assert.deepEqual(run.output, { result: "7 is odd" });
});

test("a failing check command takes the recovery route", async () => {
  const run = await testWorkflow(branch, { input: { n: -1 } });
  assert.equal(run.state, "completed");
  assert.equal(run.output.result, "-1 is negative");
  assert.equal(run.attempts.find((a) => a.nodeId === "check")?.state, "failed");
});

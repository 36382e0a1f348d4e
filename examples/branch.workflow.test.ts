/**
 * Tests of branch.workflow.ts with the test kit (docs/testing.md), given the definition the file
 * exports (the other examples pass their file's URL; both run the workflow from its file).
 */
import assert from "node:assert/strict";
import { test, testWorkflow } from "@osolmaz/pi-workflows/testing";
import branch from "./branch.workflow.ts";

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

/** Tests of human-decision.workflow.ts with the test kit (docs/testing.md). */
import assert from "node:assert/strict";
import { test, testWorkflow, timeOut } from "@osolmaz/pi-workflows/testing";

const workflow = new URL("./human-decision.workflow.ts", import.meta.url);

test("a rejection with a reason abandons the release", async () => {
  const run = await testWorkflow(workflow, {
    input: { version: "2.0.0" },
    human: { approval: { choice: "reject", text: "tests are flaky" } },
  });
  assert.deepEqual(run.output, { released: null, reason: "tests are flaky" });
});

test("nobody answering for ten minutes records the default: approve", async () => {
  const run = await testWorkflow(workflow, {
    input: { version: "2.0.0" },
    human: { approval: timeOut },
  });
  assert.deepEqual(run.output, { released: "2.0.0" });
});

test("survives a worker crash at every durable boundary", async () => {
  const run = await testWorkflow(workflow, {
    input: { version: "2.0.0" },
    human: { approval: "approve" },
    crash: "every-boundary",
  });
  assert.ok(run.crash!.boundaries.every((b) => b.outcome === "same"));
});

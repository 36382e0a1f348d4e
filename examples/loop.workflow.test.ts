/** Tests of loop.workflow.ts with the test kit (docs/testing.md). */
import assert from "node:assert/strict";
import { test, testWorkflow } from "@osolmaz/pi-workflows/testing";

const loop = new URL("./loop.workflow.ts", import.meta.url);

test("counts to the requested number, then finishes", async () => {
  const run = await testWorkflow(loop, { input: { times: 3 } });
  assert.deepEqual(run.output, { counted: 3, stepsUsed: 4 });
  assert.equal(run.attempts.filter((a) => a.nodeId === "tick").length, 3);
});

test("refuses an input out of range before anything runs", async () => {
  await assert.rejects(
    testWorkflow(loop, { input: { times: 99 } }),
    /input.times must be an integer from 1 to 20/,
  );
});

test("survives a worker crash at every durable boundary", async () => {
  const run = await testWorkflow(loop, { input: { times: 2 }, crash: "every-boundary" });
  assert.ok(run.crash!.boundaries.every((b) => b.outcome === "same"));
});

/**
 * Tests of hello.workflow.ts with the test kit (docs/testing.md). Run them with
 * `pi-workflows test examples/`, `node --test` or `deno test -A`.
 */
import assert from "node:assert/strict";
import { test, testWorkflow } from "@osolmaz/pi-workflows/testing";

const hello = new URL("./hello.workflow.ts", import.meta.url);

test("greets through a real shell command", async () => {
  const run = await testWorkflow(hello, { input: { name: "Ada" } });
  assert.equal(run.state, "completed");
  assert.deepEqual(run.outputs.echo, { printed: "Hello, Ada!", exitCode: 0 });
  assert.deepEqual(run.output, { message: "Hello, Ada!", steps: ["greet", "echo", "finish"] });
});

test("a scripted result stands in for the shell step", async () => {
  const run = await testWorkflow(hello, {
    input: { name: "Ada" },
    answers: { echo: { printed: "(scripted)", exitCode: 0 } },
  });
  assert.equal(run.output.message, "(scripted)");
});

test("survives a worker crash at every durable boundary", async () => {
  const run = await testWorkflow(hello, { input: { name: "Ada" }, crash: "every-boundary" });
  // The shell step is an unmanaged action: a crash while it runs stops the run for an operator
  // (effectAmbiguous) instead of running it twice; every other boundary recovers the same end.
  const outcomes = new Set(run.crash!.boundaries.map((b) => b.outcome));
  assert.ok(!outcomes.has("differs"));
  assert.ok(run.crash!.boundaries.some((b) => b.outcome === "same"));
});

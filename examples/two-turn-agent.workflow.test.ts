/** Tests of two-turn-agent.workflow.ts with the test kit (docs/testing.md). */
import assert from "node:assert/strict";
import { test, testWorkflow } from "@osolmaz/pi-workflows/testing";

const workflow = new URL("./two-turn-agent.workflow.ts", import.meta.url);

test("a plan the draft step's validate rejects is sent again, fixed", async () => {
  const run = await testWorkflow(workflow, {
    input: { task: "add a README" },
    answers: {
      draft: [{ steps: [] }, { steps: ["write README.md", "link it"] }],
      review: (prompt) => ({ risk: prompt.includes("link it") ? "a dead link" : "?", ok: true }),
    },
  });
  assert.deepEqual(run.output, {
    plan: { steps: ["write README.md", "link it"] },
    review: { risk: "a dead link", ok: true },
  });
});

/**
 * A human decision's saved `onTimeout` default is applied by the host at the deadline, with no
 * worker alive while the run waits, and the run then continues along the chosen edge.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  killAll,
  requestOnce,
  startHostProcess,
  stopProcess,
  tempHome,
  waitFor,
} from "./helpers.ts";
import { hostRequest } from "./helpers.ts";

afterEach(killAll);

const WORKFLOW = `import {
  choice, compute, defineHumanChoices, defineWorkflow, humanDecision, humanDecisionEdge,
} from "pi-workflows";
const choices = defineHumanChoices({
  approve: choice({ label: "Approve" }),
  stop: choice({ label: "Stop" }),
});
export default defineWorkflow({
  name: "gate",
  startAt: "ask",
  nodes: {
    ask: humanDecision({
      audience: "operator",
      choices,
      onTimeout: { afterMs: 400, response: { choice: "approve" } },
      request: () => ({
        title: "Ship it?",
        subject: "ship",
        presentation: { schema: "pi-workflows.decision-presentation.v1", summary: "Ship?", blocks: [] },
      }),
    }),
    shipped: compute({ run: ({ outputs }) => ({ shipped: true, answer: outputs.ask }) }),
    stopped: compute({ run: () => ({ shipped: false }) }),
  },
  edges: [humanDecisionEdge({ from: "ask", choices, cases: { approve: "shipped", stop: "stopped" } })],
});
`;

describe("human decision onTimeout", () => {
  it("records the saved default at the deadline and the run continues on its edge", async () => {
    const home = tempHome();
    const project = join(home.root, "project");
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, "gate.workflow.ts"), WORKFLOW);
    const host = await startHostProcess(home.env);
    try {
      const started = await requestOnce(
        home.socketPath,
        hostRequest("run.start", { payload: { workflow: "gate.workflow.ts", cwd: project } }),
      );
      expect(started.error).toBeUndefined();
      const runId = started.receipt.run.runId;
      const status = () =>
        requestOnce(home.socketPath, hostRequest("run.status", { runId }))
          .then((r) => r.receipt);

      // It waits first (no worker), then the default answers it and a new worker finishes it.
      await waitFor(
        async () => (await status()).run.state === "waiting",
        "the run to wait",
        20_000,
      );
      const done = await waitFor(
        async () => {
          const s = await status();
          return s.run.state === "completed" ? s : null;
        },
        "the default to complete the run",
        20_000,
      );
      expect(done.run.output).toEqual({ shipped: true, answer: { choice: "approve" } });
      expect(done.attempts.map((a: any) => [a.nodeId, a.state])).toEqual([
        ["ask", "ok"],
        ["shipped", "ok"],
      ]);
      expect(host.stderr()).toContain("decision.timeoutDefault");
    } finally {
      await stopProcess(host);
      home.cleanup();
    }
  });
});

/**
 * A controller's child run with an agent step, end to end with the real Pi: `controller apply`
 * from the CLI records the Pi it finds with the controller, the child run's agent step runs in a
 * headless Pi child against the fake model, and its end reconciles the parent to settled.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeStateStore } from "../../src/state/store.ts";
import { queryOne } from "../../src/state/statements.ts";
import { PI_CLI } from "../support/pi-sandbox.ts";
import { createHeadlessEnv, type HeadlessEnv, oneAgentStep } from "../support/headless-env.ts";

const DRAFTER = `
import { defineController } from "@osolmaz/pi-workflows";
export default defineController({
  name: "drafter",
  initialStatus: () => ({ phase: "new" }),
  async reconcile(ctx, resource) {
    const child = await ctx.workflows.ensure({
      requestKey: "draft-" + resource.metadata.generation,
      workflow: "./draft.workflow.ts",
      input: {},
    });
    return ctx.settled({ controllerStatus: { phase: child.state }, workflowRun: child });
  },
});
`;

describe("a controller child run with an agent step", () => {
  let h: HeadlessEnv;

  beforeAll(async () => {
    h = await createHeadlessEnv();
    const dir = join(h.sandbox.project, ".pi", "controllers");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "drafter.controller.ts"), DRAFTER);
    h.writeWorkflow("draft.workflow.ts", oneAgentStep("draft"));
  });
  afterAll(async () => {
    await h?.close();
  });

  it("runs headless with the Pi the apply declared and settles its parent", async () => {
    const cwd = ["--cwd", h.sandbox.project];
    const applied = await h.cli(
      ["controller", "apply", "drafter", "d1", "--spec-json", "{}", "--wait", "--timeout", "120"]
        .concat(cwd),
      150_000,
    );
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    const detail = await h.cliJson(["controller", "get", "drafter", "d1", ...cwd]);
    expect(detail.resource.status.controllerStatus).toEqual({ phase: "succeeded" });
    const child = detail.resource.status.workflowRun;
    expect(child).toMatchObject({ state: "succeeded", attempt: 1 });
    const status = await h.cliJson(["status", child.runId]);
    expect(status.run).toMatchObject({ state: "completed", executionMode: "headless" });
    expect(status.run.output).toEqual({ result: { ok: true } });
    // The agent step reached the fake model through a headless Pi child.
    expect(h.model.requests.some((r) => r.lastUserText.includes("Do the work for draft."))).toBe(
      true,
    );
    const store = h.openState();
    try {
      expect(queryOne(store, "SELECT pi_command FROM controllers WHERE name = 'drafter'"))
        .toEqual({ pi_command: PI_CLI });
    } finally {
      closeStateStore(store);
    }
  }, 180_000);
});

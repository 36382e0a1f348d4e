/**
 * Reconciles in a real controller worker process under the in-process supervision: a managed
 * effect applied once, status patches and conditions, generation handling, a child workflow in
 * the global run queue that enqueues its parent when it ends, and `checkInvariants` clean.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../src/os/stop-group.ts";
import { queryOne } from "../../src/state/statements.ts";
import {
  type ControllerHarness,
  createControllerHarness,
  isSettled,
} from "../support/controllers.ts";

const SYNC = `
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { conditionTrue, defineController } from "pi-workflows";
export default defineController({
  name: "sync",
  initialStatus: (spec) => ({ phase: "new", target: spec.target }),
  async reconcile(ctx, resource) {
    const { target, text, log } = resource.spec;
    const write = await ctx.effects.ensure({
      key: "write-" + resource.metadata.generation,
      kind: "file.write",
      request: { target, text },
      observe: () => (existsSync(target) && readFileSync(target, "utf8") === text ? { bytes: text.length } : null),
      apply: () => {
        appendFileSync(log, "apply\\n");
        writeFileSync(target, text);
        return { bytes: text.length };
      },
    });
    return ctx.settled({
      controllerStatus: {
        phase: "synced",
        bytes: write.receipt.bytes,
        adopted: write.adopted,
        cwd: process.cwd(),
        compileCache: process.env.NODE_COMPILE_CACHE ?? null,
      },
      conditions: [conditionTrue("Ready", "Synced", "the file matches the spec")],
    });
  },
});
`;

let h: ControllerHarness;
beforeAll(async () => {
  // A cache of its own: the test checks that the resolver writes it.
  h = await createControllerHarness({}, {}, {}, { ownCompileCache: true });
  h.writeController("sync", SYNC);
}, 30_000);
afterAll(async () => {
  await h?.close();
});

describe("reconciles in a controller worker", () => {
  it("applies the effect once and settles with the patched status", async () => {
    // The worker starts in the state directory (its compile cache) and enters the project; its
    // code sees neither the state directory nor the cache variable.
    const target = join(h.root, "out-a.txt");
    const log = join(h.root, "applies-a.log");
    const applied = await h.apply("sync", "a", { target, text: "hello", log });
    expect(applied.resource.status.controllerStatus).toEqual({ phase: "new", target });
    const done = await h.waitForResource("sync", "a", isSettled);
    expect(done.resource.status).toMatchObject({
      observedGeneration: 1,
      controllerStatus: {
        phase: "synced",
        bytes: 5,
        adopted: false,
        cwd: h.projectDir,
        compileCache: null,
      },
      conditions: [{ type: "Ready", status: true, reason: "Synced", observedGeneration: 1 }],
    });
    // The resolver wrote the cache once it had loaded the controller, not only at its exit.
    const cache = join(h.stateDir, "compile-cache");
    expect(
      await waitUntil(
        () => existsSync(cache) && readdirSync(cache, { recursive: true }).length > 1,
        10_000,
      ),
    )
      .toBe(true);
    expect(readFileSync(target, "utf8")).toBe("hello");
    expect(readFileSync(log, "utf8")).toBe("apply\n");
    expect(done.effects).toEqual([
      expect.objectContaining({ kind: "file.write", state: "applied" }),
    ]);
    expect(h.invariants()).toEqual([]);
  });

  it("a spec change is a new generation reconciled again; the same spec is not", async () => {
    const target = join(h.root, "out-b.txt");
    const log = join(h.root, "applies-b.log");
    await h.apply("sync", "b", { target, text: "one", log });
    await h.waitForResource("sync", "b", isSettled);
    const same = await h.apply("sync", "b", { target, text: "one", log });
    expect(same.changed).toBe(false);
    const next = await h.apply("sync", "b", { target, text: "two", log });
    expect(next.resource.metadata.generation).toBe(2);
    const done = await h.waitForResource(
      "sync",
      "b",
      (d) => isSettled(d) && d.resource.status.observedGeneration === 2,
    );
    expect(done.resource.status.controllerStatus).toMatchObject({ phase: "synced", bytes: 3 });
    expect(readFileSync(target, "utf8")).toBe("two");
    expect(readFileSync(log, "utf8")).toBe("apply\napply\n");
    expect(existsSync(target)).toBe(true);
    expect(h.invariants()).toEqual([]);
  });
});

const COPY_WORKFLOW = `
import { compute, defineWorkflow, shell } from "pi-workflows";
export default defineWorkflow({
  name: "copy",
  budget: { maxCostUsd: 2, maxTokens: 1000 },
  startAt: "plan",
  nodes: {
    plan: compute({ run: ({ input }) => ({ from: input.from, to: input.to }) }),
    copy: shell({
      exec: ({ outputs }) => ({ command: "cp", args: [outputs.plan.from, outputs.plan.to] }),
      parse: () => ({ copied: true }),
    }),
  },
  edges: [{ from: "plan", to: "copy" }],
});
`;

const GREET_WORKFLOW = `
import { assistantMessage, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "greet",
  startAt: "hello",
  nodes: { hello: assistantMessage({ prompt: "Say hello" }) },
  edges: [],
});
`;

const DRAFT_WORKFLOW = `
import { agent, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "draft",
  startAt: "write",
  nodes: { write: agent({ prompt: "Write a draft" }) },
  edges: [],
});
`;

const MIRROR = `
import { defineController } from "pi-workflows";
export default defineController({
  name: "mirror",
  budget: { maxCostUsd: 0.5 },
  initialStatus: () => ({ phase: "new" }),
  async reconcile(ctx, resource) {
    const child = await ctx.workflows.ensure({
      requestKey: "copy-" + resource.metadata.generation,
      workflow: resource.spec.workflow,
      input: { from: resource.spec.from, to: resource.spec.to },
    });
    return ctx.settled({
      controllerStatus: { phase: child.state === "succeeded" ? "mirrored" : child.state },
      workflowRun: child,
    });
  },
});
`;

describe("child workflows", () => {
  beforeAll(() => {
    h.writeWorkflow("copy.workflow.ts", COPY_WORKFLOW);
    h.writeWorkflow("greet.workflow.ts", GREET_WORKFLOW);
    h.writeWorkflow("draft.workflow.ts", DRAFT_WORKFLOW);
    h.writeController("mirror", MIRROR);
  });

  it("a child run in the global queue ends and enqueues its parent, which settles", async () => {
    const from = join(h.root, "mirror-src.txt");
    const to = join(h.root, "mirror-dst.txt");
    writeFileSync(from, "copied text");
    await h.apply("mirror", "m", { workflow: "./copy.workflow.ts", from, to });
    const done = await h.waitForResource(
      "mirror",
      "m",
      (d) =>
        isSettled(d) &&
        (d.resource.status.controllerStatus as { phase: string }).phase === "mirrored",
    );
    const run = done.resource.status.workflowRun!;
    expect(run).toMatchObject({ state: "succeeded", attempt: 1 });
    expect(h.run(run.runId!)).toMatchObject({ state: "completed", executionMode: "headless" });
    expect(readFileSync(to, "utf8")).toBe("copied text");
    // The child keeps its workflow's own budget; the controller's is a total over its children.
    expect(queryOne(
      h.store,
      "SELECT r.budget_cost, r.budget_tokens, c.budget_cost AS pool_cost, c.name FROM runs r " +
        "JOIN controllers c ON c.controller_id = r.budget_pool_id WHERE r.run_id = :runId",
      { runId: run.runId! },
    )).toEqual({ budget_cost: 2, budget_tokens: 1000, pool_cost: 0.5, name: "mirror" });
    expect(done.workflows).toEqual([
      expect.objectContaining({ requestKey: "copy-1", state: "succeeded" }),
    ]);
    expect(h.invariants()).toEqual([]);
  });

  it("a child that needs an origin session parks with an unsupported-input result", async () => {
    await h.apply("mirror", "g", { workflow: "./greet.workflow.ts", from: "-", to: "-" });
    const done = await h.waitForResource(
      "mirror",
      "g",
      (d) => isSettled(d) && d.resource.status.workflowRun !== undefined,
    );
    const child = done.resource.status.workflowRun!;
    expect(child).toMatchObject({ state: "waiting", blockedReason: "unsupportedInput" });
    const run = h.run(child.runId!);
    expect(run).toMatchObject({ state: "queued", blockedReason: "unsupportedInput" });
    expect(h.invariants()).toEqual([]);
  });

  it("a child with agent steps runs with the Pi its controller declared, or fails at once", async () => {
    const spec = { workflow: "./draft.workflow.ts", from: "-", to: "-" };
    await h.apply("mirror", "d1", spec);
    const refused = await h.waitForResource(
      "mirror",
      "d1",
      (d) => isSettled(d) && d.resource.status.workflowRun !== undefined,
    );
    expect(refused.resource.status.workflowRun).toMatchObject({
      state: "failed",
      error: {
        code: "piUnavailable",
        message: expect.stringMatching(/apply it again from a shell/),
      },
    });
    expect(refused.resource.status.workflowRun?.runId).toBeUndefined();
    // An apply that declares a Pi records it with the controller; later applies without one keep it.
    const pi = { command: join(h.root, "no-such-pi"), args: ["--model", "fake-model"] };
    await h.apply("mirror", "d2", spec, pi);
    await h.apply("mirror", "d3", spec);
    for (const key of ["d2", "d3"]) {
      const started = await h.waitForResource(
        "mirror",
        key,
        (d) => d.resource.status.workflowRun?.runId != null,
      );
      const binding = queryOne<{ pi_command: string; pi_args_json: string }>(
        h.store,
        "SELECT pi_command, pi_args_json FROM run_bindings WHERE run_id = :runId",
        { runId: started.resource.status.workflowRun!.runId! },
      );
      expect(binding).toEqual({ pi_command: pi.command, pi_args_json: JSON.stringify(pi.args) });
    }
  });

  it("a child whose workflow cannot be resolved is failed with the resolver's error", async () => {
    await h.apply("mirror", "x", { workflow: "no-such-workflow", from: "-", to: "-" });
    const done = await h.waitForResource(
      "mirror",
      "x",
      (d) => isSettled(d) && d.resource.status.workflowRun !== undefined,
    );
    expect(done.resource.status.workflowRun).toMatchObject({
      state: "failed",
      error: { code: "workflowNotFound" },
    });
  });
});

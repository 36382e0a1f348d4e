/**
 * The controller authoring API: `defineController` checks, discovery with the workflows'
 * precedence, loading through the `pi-workflows` specifiers (the same objects as mod.ts), the
 * pinned source identity, and the condition and status-patch helpers.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import * as mod from "../../mod.ts";
import {
  applyStatusPatch,
  conditionFalse,
  conditionTrue,
  conditionUnknown,
  mergeConditions,
} from "../../src/controllers/conditions.ts";
import { defineController } from "../../src/controllers/define-controller.ts";
import { discoverControllers, resolveControllerRef } from "../../src/controllers/discovery.ts";
import { loadController } from "../../src/controllers/load-controller.ts";
import { verifySourceIdentity } from "../../src/workflows/sources/identity.ts";
import { tempProjects } from "../support/temp-project.ts";

const { project } = tempProjects("piw-ctl-");

const controllerFile = (name: string, extra = "") =>
  `import { conditionTrue, defineController } from "pi-workflows";
import * as api from "@osolmaz/pi-workflows";
${extra}
export const sameApi = api.defineController === defineController;
export default defineController({
  name: "${name}",
  initialStatus: (spec) => ({ from: "${name}", spec }),
  reconcile: (ctx) => ctx.settled({ conditions: [conditionTrue("Ready", "Ok")] }),
});
`;

describe("defineController", () => {
  it("checks the definition eagerly with one clear line", () => {
    const ok = { name: "sync", initialStatus: () => ({}), reconcile: (ctx: never) => ctx };
    expect(defineController(ok as never).name).toBe("sync");
    expect(() => defineController({ ...ok, name: "Sync" } as never)).toThrow(
      'Invalid controller definition "Sync": name: expected a lowercase letter',
    );
    expect(() => defineController({ ...ok, reconcile: 1 } as never)).toThrow(
      "reconcile: expected a function",
    );
    expect(() => defineController({ ...ok, timeoutMs: 0 } as never)).toThrow("timeoutMs");
    expect(() => defineController({ ...ok, extra: 1 } as never)).toThrow("extra: unknown field");
    expect(() => defineController({ ...ok, budget: { maxCostUsd: -1 } } as never)).toThrow(
      /budget: .*maxCostUsd/,
    );
    expect(defineController({ ...ok, budget: { maxTokens: 5000 } }).budget).toEqual({
      maxTokens: 5000,
    });
    expect(mod.defineController).toBe(defineController);
  });
});

describe("discovery and loading", () => {
  it("the project's .pi/controllers/ shadows the agent directory; paths work too", () => {
    const agent = project({ "controllers/sync.controller.ts": controllerFile("sync") });
    const dir = project({
      ".pi/controllers/sync.controller.ts": controllerFile("sync"),
      ".pi/controllers/notes.txt": "not a controller",
    });
    const found = discoverControllers({ cwd: dir, agentDir: agent });
    expect(found.map((c) => [c.name, c.origin])).toEqual([["sync", "project"]]);
    const user = discoverControllers({ cwd: project({}), agentDir: agent });
    expect(user.map((c) => [c.name, c.origin])).toEqual([["sync", "user"]]);
    expect(resolveControllerRef("./.pi/controllers/sync.controller.ts", { cwd: dir })).toBe(
      found[0].ref.path,
    );
    expect(() => resolveControllerRef("nope", { cwd: dir, agentDir: agent })).toThrow(
      "Controller not found: nope",
    );
  });

  it("loads through the specifiers, pins every file it read, and refuses bad files", async () => {
    const dir = project({
      ".pi/controllers/sync.controller.ts": controllerFile(
        "sync",
        'import { label } from "./lib/label.ts";',
      ),
      ".pi/controllers/lib/label.ts": "export const label = 'x';",
      ".pi/controllers/misnamed.controller.ts": controllerFile("other"),
      ".pi/controllers/empty.controller.ts": "export const x = 1;",
    });
    const loaded = await loadController("sync", { cwd: dir, agentDir: dir });
    expect(loaded.definition.name).toBe("sync");
    expect(loaded.definition.initialStatus({ a: 1 } as never)).toEqual({
      from: "sync",
      spec: { a: 1 },
    });
    expect(loaded.source.mounted.map((m) => (m as { path: string }).path)).toEqual([
      join(loaded.sourceRef, "..", "lib", "label.ts"),
    ]);
    expect(loaded.sourceDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(verifySourceIdentity(loaded.source)).toEqual({ ok: true });
    writeFileSync(join(dir, ".pi/controllers/lib/label.ts"), "export const label = 'y';");
    expect(verifySourceIdentity(loaded.source).ok).toBe(false);
    const reloaded = await loadController("sync", { cwd: dir, agentDir: dir });
    expect(reloaded.sourceDigest).not.toBe(loaded.sourceDigest);
    await expect(loadController("misnamed", { cwd: dir, agentDir: dir })).rejects.toThrow(
      'defines "other": name the file other.controller.ts',
    );
    await expect(loadController("empty", { cwd: dir, agentDir: dir })).rejects.toThrow(
      'must "export default defineController({...})"',
    );
  });
});

describe("conditions and status patches", () => {
  const T0 = "2026-01-01T00:00:00.000Z";
  const T1 = "2026-01-01T00:01:00.000Z";

  it("keeps a condition's transition time while its status stays", () => {
    const first = mergeConditions([], [conditionFalse("Ready", "Waiting")], 1, T0);
    expect(first).toEqual([{
      type: "Ready",
      status: false,
      reason: "Waiting",
      observedGeneration: 1,
      lastTransitionTime: T0,
    }]);
    const same = mergeConditions(first, [conditionFalse("Ready", "StillWaiting", "m")], 2, T1);
    expect(same[0]).toMatchObject({ reason: "StillWaiting", message: "m", lastTransitionTime: T0 });
    const flipped = mergeConditions(same, [conditionTrue("Ready", "Done")], 2, T1);
    expect(flipped[0]).toMatchObject({ status: true, lastTransitionTime: T1 });
    expect(() => mergeConditions([], [conditionTrue("A", "x"), conditionUnknown("A", "y")], 1, T0))
      .toThrow('condition "A" appears twice');
    expect(() => conditionTrue("", "x")).toThrow("type must be 1-128 characters");
  });

  it("applies a patch: observedGeneration moves up, omitted fields stay, null removes a run", () => {
    const current = {
      observedGeneration: 1,
      conditions: [],
      controllerStatus: { n: 1 },
      workflowRun: { requestId: "r", state: "running" as const, attempt: 1 },
    };
    expect(applyStatusPatch(current, undefined, 2, T0)).toEqual({
      ...current,
      observedGeneration: 2,
    });
    expect(applyStatusPatch(current, { controllerStatus: { n: 2 }, workflowRun: null }, 3, T0))
      .toEqual({ observedGeneration: 3, conditions: [], controllerStatus: { n: 2 } });
  });
});

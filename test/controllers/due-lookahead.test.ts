/**
 * The scheduler's tick reads as many due resources as it can claim, and looks further only when
 * some go to workers that take nothing now: a controller whose worker holds a reconcile past its
 * deadline (it never let go; the host stops that worker only after the kill grace) does not hold
 * back the due resource of another controller behind its own.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryAll } from "../../src/state/statements.ts";
import {
  type ControllerHarness,
  createControllerHarness,
  isSettled,
} from "../support/controllers.ts";

let h: ControllerHarness;
beforeAll(async () => {
  // Room for two reconciles; a long kill grace keeps the stuck worker for the whole test.
  h = await createControllerHarness({ killGraceMs: 30_000 }, {}, { maxConcurrentReconciles: 2 });
}, 30_000);
afterAll(async () => {
  await h?.close();
}, 60_000);

function epochs(name: string): string[] {
  return queryAll<{ status: string }>(
    h.store,
    "SELECT w.status FROM controller_workers w JOIN controllers c ON c.controller_id = " +
      "w.controller_id WHERE c.name = :name ORDER BY w.started_at",
    { name },
  ).map((e) => e.status);
}

describe("due resources behind a worker that takes nothing", () => {
  it("another controller's due resource is claimed while it waits", async () => {
    h.writeController(
      "stuck",
      `import { defineController } from "pi-workflows";
export default defineController({
  name: "stuck",
  timeoutMs: 500,
  initialStatus: () => ({}),
  async reconcile(ctx, resource) {
    if (resource.spec.hang) await new Promise(() => {});
    return ctx.settled({ controllerStatus: { done: true } });
  },
});`,
    );
    h.writeController(
      "quick",
      `import { defineController } from "pi-workflows";
export default defineController({
  name: "quick",
  initialStatus: () => ({}),
  reconcile: (ctx) => ctx.settled({ controllerStatus: { done: true } }),
});`,
    );
    await h.apply("stuck", "hung", { hang: true });
    await h.waitForResource(
      "stuck",
      "hung",
      (d) => d.events.some((e) => e.type === "reconcile.timedOut"),
    );
    // Due before the other controller's resource, and its worker takes nothing new now.
    await h.apply("stuck", "next", {});
    await h.apply("quick", "q", {});
    await h.waitForResource("quick", "q", isSettled, 20_000);
    expect(epochs("stuck")).toEqual(["live"]);
    expect(h.resource("stuck", "next")!.queue).toMatchObject({ reconciling: false });
    expect(h.invariants()).toEqual([]);
  });
});

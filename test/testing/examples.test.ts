/**
 * Every workflow in examples/ has a test written with the kit beside it, and they pass, run the
 * way a user runs them: `pi-workflows test examples/` (crash-at-every-boundary included).
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, runCliProcess, tempHome } from "../support/host.ts";

describe("examples/*.workflow.test.ts", () => {
  it("every example workflow has a test file", () => {
    const workflows = readdirSync(join(ROOT, "examples")).filter((name) =>
      name.endsWith(".workflow.ts")
    );
    expect(workflows.length).toBeGreaterThan(5);
    const missing = workflows.filter((name) =>
      !existsSync(join(ROOT, "examples", name.replace(/\.workflow\.ts$/, ".workflow.test.ts")))
    );
    expect(missing).toEqual([]);
  });

  it("pi-workflows test examples/ passes every one", async () => {
    const home = tempHome();
    try {
      const result = await runCliProcess(["test", "examples/"], home.env, 900_000);
      const summary = result.stdout.trim().split("\n").at(-1) ?? "";
      expect(summary, result.stdout + result.stderr).toMatch(/^\d+ passed, 0 failed$/);
      expect(result.code).toBe(0);
    } finally {
      await home.cleanup();
    }
  }, 900_000);
});

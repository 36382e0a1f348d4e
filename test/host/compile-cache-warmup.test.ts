/**
 * A real host warms a new state directory's compile cache only after it reported ready, and a
 * host started on a warm cache does not warm it again.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  killAll,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
} from "../support/host.ts";

let home: TempHome | null = null;
afterEach(async () => {
  await killAll();
  await home?.cleanup();
  home = null;
});

describe("host start", () => {
  it("warms a new compile cache after ready, once", async () => {
    home = tempHome({}, { ownCompileCache: true });
    const first = await startHostProcess(home.env);
    await first.waitForStderr("compile_cache.warmed", 30_000);
    const log = first.stderr();
    expect(log.indexOf("host.ready")).toBeLessThan(log.indexOf("compile_cache.warming"));
    expect(existsSync(join(home.stateDir, "compile-cache", "warmed.json"))).toBe(true);
    await stopProcess(first);

    const second = await startHostProcess(home.env);
    await second.waitForStderr("compile_cache.warmup_skipped", 10_000);
    expect(second.stderr()).toMatch(/compile_cache\.warmup_skipped reason=alreadyWarm/);
    expect(second.stderr()).not.toContain("compile_cache.warming");
    await stopProcess(second);
  });
});

/**
 * `view <runId>` takes a run id as every other command does (docs/cli.md "Run ids"): any unique
 * prefix, with or without `run-`, found in the database read-only with no host. Before, only a
 * whole id worked: `view 4cb6b2a5` (the short form every command prints) showed "Run not found"
 * and exited 0.
 */
import { afterEach, describe, expect, it } from "vitest";
import { runCliProcess, type TempHome, tempHome } from "../support/host.ts";
import { seedRuns } from "../support/host-seed.ts";

let home: TempHome | undefined;
afterEach(() => {
  home?.cleanup();
  home = undefined;
});

const A = "run-4cb6b2a5-1111-4111-8111-111111111111";
const B = "run-4cb7aaaa-2222-4222-8222-222222222222";

describe("view <runId>", () => {
  it("opens a run by a unique prefix; refuses an unknown or ambiguous one in one line", async () => {
    home = tempHome();
    seedRuns(home.stateDir, [{ runId: A }, { runId: B }]);
    const view = (id: string) => runCliProcess(["view", id, "--once"], home!.env, 30_000);

    for (const typed of ["4cb6b2a5", "run-4cb6", A]) {
      const found = await view(typed);
      expect([found.code, found.stderr], typed).toEqual([0, ""]);
      expect(found.stdout.split("\n")[0], typed).toBe(`seeded — Seeded ${A}`);
    }

    const unknown = await view("ffff");
    expect(unknown.code).toBe(3);
    expect(unknown.stdout).toBe("");
    expect(unknown.stderr.trim()).toBe(
      "Unknown run: no run id starts with 'ffff' (see 'pi-workflows list --all')",
    );
    expect((await view("run-4cb6b2a5-1111-4111-8111-11111111111f")).code).toBe(3);

    const ambiguous = await view("4cb");
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr.trim().split("\n")).toHaveLength(1);
    expect(ambiguous.stderr).toContain("Run id '4cb' is ambiguous: 2 runs match");
  });
});

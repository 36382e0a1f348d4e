/** Every benchmark program is in the catalogue that `npm run bench` lists and CI's smoke checks. */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BENCHES } from "../bench/_catalogue.ts";
import { ROOT } from "../support/host.ts";

describe("bench catalogue", () => {
  it("lists exactly the benchmark programs in test/bench/, each with a line and its fields", () => {
    const programs = readdirSync(join(ROOT, "test/bench"))
      .filter((f) => f.endsWith(".ts") && f !== "main.ts" && !f.startsWith("_"))
      .map((f) => f.slice(0, -3))
      .sort();
    expect(Object.keys(BENCHES).sort()).toEqual(programs);
    for (const [name, entry] of Object.entries(BENCHES)) {
      expect(entry.what.length, name).toBeGreaterThan(0);
      expect(entry.fields.length, name).toBeGreaterThan(0);
    }
  });
});

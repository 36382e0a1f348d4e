import { describe, expect, it } from "vitest";
import { plannedName, unfinishedFiles } from "./every-file-ran.ts";

const mod = (moduleId: string, state: string, project = "") => ({
  moduleId,
  state: () => state as ReturnType<import("vitest/node").TestModule["state"]>,
  project: { name: project },
});

describe("every test file ran", () => {
  it("names a planned file with no module, or one that never ended", () => {
    const planned = ["/t/a.test.ts", "/t/b.test.ts", "/t/c.test.ts", "/t/d.test.ts"];
    const modules = [mod("/t/a.test.ts", "passed"), mod("/t/c.test.ts", "queued")];
    expect(unfinishedFiles(planned, modules)).toEqual([
      "/t/b.test.ts",
      "/t/c.test.ts",
      "/t/d.test.ts",
    ]);
  });

  it("accepts files that passed, failed or were skipped", () => {
    const planned = ["/t/a.test.ts", "/t/b.test.ts", "/t/c.test.ts"];
    const modules = [
      mod("/t/a.test.ts", "passed"),
      mod("/t/b.test.ts", "failed"),
      mod("/t/c.test.ts", "skipped"),
    ];
    expect(unfinishedFiles(planned, modules)).toEqual([]);
  });

  it("counts a file the ps pass runs again as a file of its own", () => {
    const planned = [
      plannedName("/t/a.test.ts", "default"),
      plannedName("/t/a.test.ts", "ps"),
      plannedName("/t/b.test.ts", "ps"),
    ];
    const modules = [
      mod("/t/a.test.ts", "passed", "default"),
      mod("/t/a.test.ts", "running", "ps"),
      mod("/t/b.test.ts", "passed", "ps"),
    ];
    expect(unfinishedFiles(planned, modules)).toEqual(["[ps] /t/a.test.ts"]);
  });
});

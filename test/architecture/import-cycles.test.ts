/** No import cycles in src/ (docs/architecture.md): checked over every file, next to the layers. */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../support/host.ts";
import { importCycles } from "./import-cycles.ts";
import { sourceFiles } from "./import-layers.ts";

const SRC = join(ROOT, "src");

describe("import cycles", () => {
  it("no file of src/ imports itself through other files", () => {
    const cycles = importCycles(SRC, sourceFiles(SRC));
    expect(cycles.map((files) => files.join(" <-> "))).toEqual([]);
  });

  it("finds a cycle through type-only, re-exported and dynamic imports, and only cycles", () => {
    const cycles = importCycles(SRC, [
      { path: "host/a.ts", text: `import type { B } from "./b.ts";` },
      { path: "host/b.ts", text: `export { c } from "../state/c.ts";` },
      { path: "state/c.ts", text: `const a = await import("../host/a.ts");` },
      { path: "state/d.ts", text: `import { c } from "./c.ts";` },
      { path: "os/self.ts", text: `import { x } from "./self.ts";` },
      { path: "os/leaf.ts", text: `import "node:fs";` },
    ]);
    expect(cycles).toEqual([["host/a.ts", "host/b.ts", "state/c.ts"], ["os/self.ts"]]);
  });
});

/** Imports point down only (docs/ARCHITECTURE): checked over every file of `src/`. */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../host/helpers.ts";
import { checkImports, importedSpecifiers, sourceFiles } from "./import-layers.ts";

const SRC = join(ROOT, "src");

describe("import boundaries", () => {
  it("every import in src/ follows the layer table", () => {
    const violations = checkImports(SRC, sourceFiles(SRC));
    expect(violations.map((v) => `${v.file}: ${v.specifier}: ${v.message}`)).toEqual([]);
  });

  it("finds static, type-only, re-exported and dynamic imports", () => {
    const text = [
      `import { a } from "../state/a.ts";`,
      `import type { B } from "../host/b.ts";`,
      `export { c } from "./c.ts";`,
      `import {\n  d,\n} from "../os/d.ts";`,
      `const e = await import("../cli/e.ts");`,
      `import "node:fs";`,
    ].join("\n");
    expect(importedSpecifiers(text)).toEqual([
      "../state/a.ts",
      "../host/b.ts",
      "./c.ts",
      "../os/d.ts",
      "../cli/e.ts",
    ]);
  });

  it("reports an upward or sideways import, an unknown layer and an escape from src/", () => {
    const violations = checkImports(SRC, [
      { path: "worker/x.ts", text: `import { y } from "../host/supervision/y.ts";` },
      { path: "state/x.ts", text: `import type { Z } from "../workflows/z.ts";` },
      { path: "protocol/x.ts", text: `import { w } from "./w.ts";` },
      { path: "mystery/x.ts", text: `` },
      { path: "os/x.ts", text: `import { m } from "../../mod.ts";` },
    ]);
    expect(violations.map((v) => `${v.file}: ${v.message}`)).toEqual([
      "worker/x.ts: src/worker may not import src/host (allowed: base, protocol, os, state, workflows, controllers)",
      "state/x.ts: src/state may not import src/workflows (allowed: base, protocol)",
      "mystery/x.ts: src/mystery is not in the layer table of test/architecture/import-layers.ts",
      "os/x.ts: imports a file outside src/",
    ]);
  });
});

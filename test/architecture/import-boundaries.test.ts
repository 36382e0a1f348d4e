/**
 * Imports point down only (docs/architecture.md): every file of `src/` checked rule by rule, so
 * a failing import names the rule it breaks.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../support/host.ts";
import {
  checkImports,
  EDGE_RULES,
  importedSpecifiers,
  LAYERS,
  ruleNames,
  sourceFiles,
} from "./import-layers.ts";

const SRC = join(ROOT, "src");
const violations = checkImports(SRC, sourceFiles(SRC));

describe("import boundaries", () => {
  it.each(ruleNames())("%s", (rule) => {
    const broken = violations.filter((v) => v.rule === rule);
    expect(broken.map((v) => `${v.file}: ${v.specifier}: ${v.message}`)).toEqual([]);
  });

  it("every violation is reported under a named rule", () => {
    const names = new Set(ruleNames());
    expect(violations.filter((v) => !names.has(v.rule))).toEqual([]);
  });

  it("an edge rule names an edge its row forbids, and every row allows only known folders", () => {
    for (const edge of EDGE_RULES) expect(LAYERS[edge.from].may).not.toContain(edge.to);
    for (const layer of Object.values(LAYERS)) {
      for (const to of layer.may) expect(Object.keys(LAYERS)).toContain(to);
    }
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

  it("reports each kind of violation under the rule it breaks", () => {
    const found = checkImports(SRC, [
      { path: "worker/x.ts", text: `import { y } from "../host/supervision/y.ts";` },
      { path: "worker/s.ts", text: `import type { S } from "../state/store.ts";` },
      { path: "state/x.ts", text: `import type { Z } from "../workflows/z.ts";` },
      { path: "workflows/c.ts", text: `import type { C } from "../state/clock.ts";` },
      { path: "protocol/x.ts", text: `import { w } from "./w.ts";` },
      { path: "protocol/y.ts", text: `import { o } from "../os/o.ts";` },
      { path: "host/db.ts", text: `import { DatabaseSync } from "node:sqlite";` },
      { path: "protocol/z.ts", text: `import { readFileSync } from "node:fs";` },
      { path: "mystery/x.ts", text: `` },
      { path: "os/x.ts", text: `import { m } from "../../mod.ts";` },
    ]);
    expect(found.map((v) => `${v.file}: ${v.rule}: ${v.message}`)).toEqual([
      "worker/x.ts: worker and host are sibling processes: neither imports the other: src/worker may not import src/host (allowed: base, protocol, os, workflows, controllers)",
      "worker/s.ts: one writer: a worker never imports state; it proposes and the host commits: src/worker may not import src/state (allowed: base, protocol, os, workflows, controllers)",
      "state/x.ts: state is the only SQL and knows shapes, not the engine: base and protocol only: src/state may not import src/workflows (allowed: base, protocol)",
      "workflows/c.ts: the engine decides from facts it is given: workflows and controllers never import state: src/workflows may not import src/state (allowed: base, protocol)",
      "protocol/y.ts: protocol holds message shapes and framing only: it stands on base alone: src/protocol may not import src/os (allowed: base)",
      "host/db.ts: one database layer: only src/state imports node:sqlite: src/host may not open the database",
      "protocol/z.ts: protocol does no I/O: it imports no file, socket or process module: src/protocol may not import node:fs",
      "mystery/x.ts: every folder of src/ has a row in the layer table: src/mystery is not in the layer table of test/architecture/import-layers.ts",
      "os/x.ts: src/ imports files of src/ only: imports a file outside src/",
    ]);
  });
});

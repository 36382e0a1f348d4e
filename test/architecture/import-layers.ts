/**
 * The layer rules of docs/architecture.md (imports point down only), as data a test can check:
 * every top-level folder of `src/` names the folders it may import from, and the rule that says
 * so, in the words a failing import is told. A folder may always import its own files. Sibling
 * layers (`worker` and `host`) may not import each other; shared OS code lives below both in
 * `os/`, shared non-wire code (clock, ids, version, names, paths) on the ground floor, `base/`.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";

/** One row of the layer table: what a folder of `src/` may import, and the rule that says so. */
export interface Layer {
  may: readonly string[];
  rule: string;
}

export const LAYERS: Record<string, Layer> = {
  base: { may: [], rule: "base is the ground floor: it imports no other folder of src/" },
  protocol: {
    may: ["base"],
    rule: "protocol holds message shapes and framing only: it stands on base alone",
  },
  os: { may: ["base"], rule: "OS specifics live in os/, which stands on base alone" },
  render: {
    may: ["base", "protocol"],
    rule: "render turns values into text and runs nothing: base and protocol only",
  },
  state: {
    may: ["base", "protocol"],
    rule: "state is the only SQL and knows shapes, not the engine: base and protocol only",
  },
  workflows: {
    may: ["base", "protocol"],
    rule: "the engine is a functional core: workflows import base and protocol only",
  },
  controllers: {
    may: ["base", "protocol", "workflows"],
    rule: "controllers build on the engine: base, protocol and workflows only",
  },
  worker: {
    may: ["base", "protocol", "os", "workflows", "controllers"],
    rule: "a worker runs the engine and proposes over its channel: no state, no host",
  },
  host: {
    may: ["base", "protocol", "os", "state", "workflows", "controllers"],
    rule: "the host runs no client, front end or worker code",
  },
  client: {
    may: ["base", "protocol", "os"],
    rule: "the client is a thin socket client: base, protocol and os only",
  },
  extension: {
    may: ["base", "client", "protocol", "render"],
    rule: "board decision 1: the Pi extension sees only base, the client, protocol and render",
  },
  viewer: {
    may: ["base", "protocol", "os", "state", "render", "client"],
    rule: "the viewer reads state read-only and draws with render",
  },
  // The test kit runs the real host in the test's process and talks to it as a client would;
  // it reads outputs and effects through state's read-only queries, like the viewer.
  testing: {
    may: ["base", "protocol", "os", "state", "workflows", "host", "client"],
    rule: "the test kit drives the real host as a client would",
  },
  // The one executable: `worker` and `host run` are its subcommands, `view` runs the viewer,
  // text output shares render's figures (durations).
  cli: {
    may: [
      "base",
      "protocol",
      "os",
      "state",
      "workflows",
      "controllers",
      "worker",
      "host",
      "client",
      "render",
      "viewer",
      "testing",
    ],
    rule: "the one executable dispatches to every part but the Pi extension",
  },
};

/**
 * Forbidden edges that matter most, named apart from their row so a failing import says exactly
 * why: the first rule matching `from -> to` is the one reported.
 */
export const EDGE_RULES: readonly { from: string; to: string; rule: string }[] = [
  {
    from: "worker",
    to: "state",
    rule: "one writer: a worker never imports state; it proposes and the host commits",
  },
  ...["worker", "host"].map((from) => ({
    from,
    to: from === "worker" ? "host" : "worker",
    rule: "worker and host are sibling processes: neither imports the other",
  })),
  ...["workflows", "controllers"].map((from) => ({
    from,
    to: "state",
    rule: "the engine decides from facts it is given: workflows and controllers never import state",
  })),
];

/** Rules about every file rather than one row of the table. */
export const FILE_RULES = {
  inTable: "every folder of src/ has a row in the layer table",
  insideSrc: "src/ imports files of src/ only",
  oneDatabaseLayer: "one database layer: only src/state imports node:sqlite",
  protocolDoesNoIo: "protocol does no I/O: it imports no file, socket or process module",
} as const;

/** Node modules that touch files, sockets or processes: protocol/ may import none of them. */
const IO_MODULES = new Set([
  "node:fs",
  "node:fs/promises",
  "node:net",
  "node:child_process",
  "node:os",
  "node:sqlite",
]);

/** Every rule's name, each once: the test checks the tree rule by rule. */
export function ruleNames(layers: Record<string, Layer> = LAYERS): string[] {
  return [
    ...new Set([
      ...Object.values(FILE_RULES),
      ...EDGE_RULES.map((r) => r.rule),
      ...Object.values(layers).map((l) => l.rule),
    ]),
  ];
}

export interface ImportViolation {
  file: string;
  specifier: string;
  /** The name of the rule the import breaks. */
  rule: string;
  message: string;
}

/** Every module a TypeScript file imports or re-exports, dynamic imports included. */
export function importedModules(text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
}

/** The relative ones of `importedModules`: the files of the tree a file imports. */
export function importedSpecifiers(text: string): string[] {
  return importedModules(text).filter((name) => name.startsWith("."));
}

/** Checks the files `files` (paths relative to `srcDir`, with their text) against `layers`. */
export function checkImports(
  srcDir: string,
  files: Iterable<{ path: string; text: string }>,
  layers: Record<string, Layer> = LAYERS,
): ImportViolation[] {
  const violations: ImportViolation[] = [];
  for (const file of files) {
    const from = layerOf(file.path);
    const layer = layers[from];
    if (layer === undefined) {
      violations.push({
        file: file.path,
        specifier: "",
        rule: FILE_RULES.inTable,
        message: `src/${from} is not in the layer table of test/architecture/import-layers.ts`,
      });
      continue;
    }
    for (const specifier of importedModules(file.text)) {
      if (!specifier.startsWith(".")) {
        if (specifier === "node:sqlite" && from !== "state") {
          violations.push({
            file: file.path,
            specifier,
            rule: FILE_RULES.oneDatabaseLayer,
            message: `src/${from} may not open the database`,
          });
        }
        if (from === "protocol" && IO_MODULES.has(specifier)) {
          violations.push({
            file: file.path,
            specifier,
            rule: FILE_RULES.protocolDoesNoIo,
            message: `src/protocol may not import ${specifier}`,
          });
        }
        continue;
      }
      const target = relative(srcDir, resolve(srcDir, dirname(file.path), specifier));
      if (target.startsWith("..")) {
        violations.push({
          file: file.path,
          specifier,
          rule: FILE_RULES.insideSrc,
          message: "imports a file outside src/",
        });
        continue;
      }
      const to = layerOf(target);
      if (to !== from && !layer.may.includes(to)) {
        const edge = EDGE_RULES.find((r) => r.from === from && r.to === to);
        violations.push({
          file: file.path,
          specifier,
          rule: edge?.rule ?? layer.rule,
          message: `src/${from} may not import src/${to} (allowed: ${
            layer.may.join(", ") || "none"
          })`,
        });
      }
    }
  }
  return violations;
}

/** Every `.ts` file under `srcDir`, as paths relative to it. */
export function sourceFiles(srcDir: string): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name.endsWith(".ts")) {
        out.push({ path: relative(srcDir, full), text: readFileSync(full, "utf8") });
      }
    }
  };
  walk(srcDir);
  return out;
}

function layerOf(path: string): string {
  return path.split(sep)[0];
}

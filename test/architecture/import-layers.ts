/**
 * The layer rule of docs/ARCHITECTURE (imports point down only), as data a test can check:
 * every top-level directory of `src/` names the directories it may import from. A directory
 * may always import its own files. Sibling layers (`worker` and `host`) may not import each
 * other; shared OS code lives below both in `os/`.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";

export const LAYERS: Record<string, readonly string[]> = {
  // The ground floor: shared non-wire code (clock and ids, version, crash points, names, paths).
  base: [],
  protocol: ["base"],
  os: ["base"],
  render: ["base", "protocol"],
  state: ["base", "protocol"],
  workflows: ["base", "protocol", "state"],
  controllers: ["base", "protocol", "state", "workflows"],
  worker: ["base", "protocol", "os", "state", "workflows", "controllers"],
  host: ["base", "protocol", "os", "state", "workflows", "controllers"],
  client: ["base", "protocol", "os"],
  // Decision 1 of the board: the Pi extension sees only the client, the protocol and render.
  extension: ["base", "client", "protocol", "render"],
  viewer: ["base", "protocol", "os", "state", "render", "client"],
  // The test kit runs the real host in the test's process and talks to it as a client would;
  // it reads outputs and effects through state's read-only queries, like the viewer.
  testing: ["base", "protocol", "os", "state", "workflows", "host", "client"],
  // The one executable: `view` runs the viewer; text output shares render's figures (durations).
  cli: [
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
    "render",
    "testing",
  ],
};

export interface ImportViolation {
  file: string;
  specifier: string;
  message: string;
}

/** Relative specifiers a TypeScript file imports or re-exports, dynamic imports included. */
export function importedSpecifiers(text: string): string[] {
  const info = ts.preProcessFile(text, true, true);
  return info.importedFiles.map((f) => f.fileName).filter((name) => name.startsWith("."));
}

/** Checks the files `files` (paths relative to `srcDir`, with their text) against `layers`. */
export function checkImports(
  srcDir: string,
  files: Iterable<{ path: string; text: string }>,
  layers: Record<string, readonly string[]> = LAYERS,
): ImportViolation[] {
  const violations: ImportViolation[] = [];
  for (const file of files) {
    const from = layerOf(file.path);
    const allowed = layers[from];
    if (allowed === undefined) {
      violations.push({
        file: file.path,
        specifier: "",
        message: `src/${from} is not in the layer table of test/architecture/import-layers.ts`,
      });
      continue;
    }
    for (const specifier of importedSpecifiers(file.text)) {
      const target = relative(srcDir, resolve(srcDir, dirname(file.path), specifier));
      if (target.startsWith("..")) {
        violations.push({
          file: file.path,
          specifier,
          message: "imports a file outside src/",
        });
        continue;
      }
      const to = layerOf(target);
      if (to !== from && !allowed.includes(to)) {
        violations.push({
          file: file.path,
          specifier,
          message: `src/${from} may not import src/${to} (allowed: ${
            allowed.join(", ") || "none"
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

/**
 * The two esbuild plugins of compile/ on small real bundles: text files read beside a module are
 * embedded, and built-in imports of the ESM bundle load when their module is first evaluated.
 */
import { afterEach, beforeEach, expect, test } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { embedTextAssets, TEXT_ASSET_READ } from "../../compile/embed-text-assets.ts";
import { lazyBuiltins } from "../../compile/lazy-builtins.ts";
import { deferredBuiltins } from "../../compile/deferred-builtins.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "piw-compile-plugins-"));
  mkdirSync(join(dir, "src"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function bundle(entry: string, plugins: Parameters<typeof build>[0]["plugins"]) {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "esm",
    write: false,
    logLevel: "silent",
    plugins,
  });
  return result.outputFiles[0].text;
}

test("embedTextAssets() inlines a text file read beside the module", async () => {
  writeFileSync(join(dir, "src", "schema.sql"), 'CREATE TABLE t (x); -- "quoted"\n');
  writeFileSync(
    join(dir, "src", "schema.ts"),
    'import { readFileSync } from "node:fs";\n' +
      'export const ddl = readFileSync(new URL("./schema.sql", import.meta.url), "utf8");\n',
  );
  const text = await bundle(join(dir, "src", "schema.ts"), [embedTextAssets()]);
  expect(text.match(TEXT_ASSET_READ)).toBeNull();
  const out = join(dir, "out.mjs");
  writeFileSync(out, text);
  // The bundle sits elsewhere and schema.sql is not beside it: the text must come from inside.
  const mod = await import(pathToFileURL(out).href);
  expect(mod.ddl).toBe('CREATE TABLE t (x); -- "quoted"\n');
});

test("embedTextAssets() fails loudly when the text file is missing", async () => {
  writeFileSync(
    join(dir, "src", "gone.ts"),
    'import { readFileSync } from "node:fs";\n' +
      'export const x = readFileSync(new URL("./missing.sql", import.meta.url), "utf8");\n',
  );
  await expect(bundle(join(dir, "src", "gone.ts"), [embedTextAssets()])).rejects.toThrow(
    /missing\.sql/,
  );
});

test("lazyBuiltins() loads a built-in only when its module is first evaluated", async () => {
  writeFileSync(
    join(dir, "src", "store.ts"),
    'import { DatabaseSync } from "node:sqlite";\nimport path from "node:path";\n' +
      'export function open() { return [new DatabaseSync(":memory:").prepare("SELECT 41 + 1 AS v").get(), path.sep]; }\n',
  );
  writeFileSync(
    join(dir, "src", "main.ts"),
    "export const before = typeof globalThis.process;\n" +
      'export async function later() { return (await import("./store.ts")).open(); }\n',
  );
  const text = await bundle(join(dir, "src", "main.ts"), [lazyBuiltins()]);
  expect(text).not.toMatch(/from\s*"node:/);
  expect(text).toContain('process.getBuiltinModule("node:sqlite")');
  const out = join(dir, "lazy.mjs");
  writeFileSync(out, text);
  const requested: string[] = [];
  const original = process.getBuiltinModule;
  process.getBuiltinModule = ((id: string) => {
    requested.push(id);
    return original.call(process, id);
  }) as typeof process.getBuiltinModule;
  try {
    const mod = await import(pathToFileURL(out).href);
    expect(requested).toEqual([]);
    expect(await mod.later()).toEqual([{ v: 42 }, "/"]);
    expect(requested).toEqual(["node:sqlite", "node:path"]);
  } finally {
    process.getBuiltinModule = original;
  }
});

test("deferredBuiltins() loads node:crypto on the first call, with the same results", async () => {
  writeFileSync(
    join(dir, "src", "hash.ts"),
    'import { createHash } from "node:crypto";\n' +
      'export const hex = (s: string) => createHash("sha256").update(s).digest("hex");\n',
  );
  const text = await bundle(join(dir, "src", "hash.ts"), [deferredBuiltins()]);
  // No static import of the built-in is left: it loads inside the forwarding function.
  expect(text).not.toMatch(/from\s*["']node:crypto["']/);
  const out = join(dir, "hash.mjs");
  writeFileSync(out, text);
  const mod = await import(pathToFileURL(out).href);
  expect(mod.hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
});

test("deferredBuiltins() refuses a class import instead of changing its identity", async () => {
  writeFileSync(
    join(dir, "src", "cls.ts"),
    'import { Hash } from "node:crypto";\nexport const isHash = (x: unknown) => x instanceof Hash;\n',
  );
  await expect(bundle(join(dir, "src", "cls.ts"), [deferredBuiltins()])).rejects.toThrow(/Hash/);
});

/**
 * `test(name, fn)` for `*.workflow.test.ts` files: one file runs under `pi-workflows test`
 * (which needs no test runner installed, see run-test-files.ts), `node --test` and `deno test`
 * alike. Under `pi-workflows test` the tests are collected and run by it; under Deno they are
 * `Deno.test`s; under vitest, vitest's own tests; otherwise `node:test` tests.
 */
import { readFileSync } from "node:fs";
import module from "node:module";
import { dirname, join } from "node:path";
import process from "node:process";

export type TestFn = () => unknown;

export interface CollectedTest {
  name: string;
  fn: TestFn;
}

const COLLECTOR = Symbol.for("pi-workflows.testing.collector");

export function test(name: string, fn: TestFn): void {
  const g = globalThis as unknown as Record<symbol, unknown> & {
    Deno?: { test(options: Record<string, unknown>): void };
  };
  const collector = g[COLLECTOR] as CollectedTest[] | undefined;
  if (collector) {
    collector.push({ name, fn });
    return;
  }
  if (g.Deno) {
    // The kit's host and its children are stopped before each test ends; Deno's op sanitizer
    // would still count the child-exit watchers Node's compatibility layer keeps briefly.
    g.Deno.test({ name, fn, sanitizeOps: false, sanitizeResources: false });
    return;
  }
  if (process.env.VITEST) {
    vitestTest()(name, fn);
    return;
  }
  const nodeTest = process.getBuiltinModule?.("node:test") as
    | { test(name: string, fn: TestFn): unknown }
    | undefined;
  if (!nodeTest) throw new Error(`test("${name}"): no test runner here (node:test is missing)`);
  nodeTest.test(name, fn);
}

/**
 * vitest's `test`, from the instance running this file: vitest loads itself with a native
 * `import`, which a `require` of the same ES module file shares (its CommonJS entry only throws).
 */
function vitestTest(): TestRegistrar {
  try {
    const require = module.createRequire(join(process.cwd(), "noop.js"));
    const manifest = require.resolve("vitest/package.json");
    const exported = JSON.parse(readFileSync(manifest, "utf8")).exports?.["."]?.import;
    const entry = typeof exported === "string" ? exported : exported?.default;
    const vitest = require(join(dirname(manifest), entry)) as { test?: TestRegistrar };
    if (typeof vitest.test === "function") return vitest.test;
  } catch {
    // Not found from here, or not loadable: say what to do instead.
  }
  throw new Error(
    "test(): vitest's own test() was not found from the current directory: import { it } from " +
      '"vitest" and call testWorkflow inside it',
  );
}

type TestRegistrar = (name: string, fn: TestFn) => unknown;

/** The tests `load` registers with `test()` (it imports one test file). */
export async function collectTests(load: () => Promise<unknown>): Promise<CollectedTest[]> {
  const g = globalThis as Record<symbol, unknown>;
  const collected: CollectedTest[] = [];
  g[COLLECTOR] = collected;
  try {
    await load();
  } finally {
    delete g[COLLECTOR];
  }
  return collected;
}

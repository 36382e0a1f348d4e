/**
 * `test(name, fn)` for `*.workflow.test.ts` files: one file runs under `pi-workflows test`
 * (which needs no test runner installed, see run-test-files.ts), `node --test` and `deno test`
 * alike. Under `pi-workflows test` the tests are collected and run by it; under Deno they are
 * `Deno.test`s; otherwise `node:test` tests. (With vitest, use its `it` around `testWorkflow`.)
 */
import process from "node:process";

export type TestFn = () => unknown;

export interface CollectedTest {
  name: string;
  fn: TestFn;
}

const COLLECTOR = Symbol.for("pi-workflows.testing.collector");

export function test(name: string, fn: TestFn): void {
  const g = globalThis as Record<symbol, unknown> & {
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
    throw new Error(
      `test("${name}"): under vitest, use vitest's own it() or test() around testWorkflow`,
    );
  }
  const nodeTest = process.getBuiltinModule?.("node:test") as
    | { test(name: string, fn: TestFn): unknown }
    | undefined;
  if (!nodeTest) throw new Error(`test("${name}"): no test runner here (node:test is missing)`);
  nodeTest.test(name, fn);
}

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

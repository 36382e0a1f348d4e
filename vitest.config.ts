import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";

// CLI glyphs follow the locale (ASCII unless it says UTF-8): tests see the UTF-8 set unless a
// test sets its own locale for a child process.
const utf8 = /utf-?8/i.test(process.env.LC_ALL || process.env.LC_CTYPE || process.env.LANG || "");

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // `*.workflow.test.ts` files are the test kit's (run by `pi-workflows test`), not vitest's.
    exclude: [...configDefaults.exclude, "**/*.workflow.test.ts"],
    // The default output, and a run that fails loudly when any test file did not run to its end.
    reporters: ["default", "./test/support/every-file-ran.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two files at a time even on 2 cores (vitest's default is cores - 1 = 1 there): most of a file's
    // time is spent waiting on the host, worker and Pi processes it starts, not on CPU.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    env: utf8 ? {} : { LC_ALL: "C.UTF-8" },
  },
});

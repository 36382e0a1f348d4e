import { defineConfig } from "vitest/config";

// CLI glyphs follow the locale (ASCII unless it says UTF-8): tests see the UTF-8 set unless a
// test sets its own locale for a child process.
const utf8 = /utf-?8/i.test(process.env.LC_ALL || process.env.LC_CTYPE || process.env.LANG || "");

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    env: utf8 ? {} : { LC_ALL: "C.UTF-8" },
  },
});

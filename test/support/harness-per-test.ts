/**
 * A supervision harness per test: the file registers it once at top level, each test opens its
 * own with the options it needs, and every harness a test opened is closed after it (also when
 * the test failed), so a test file does not repeat the `let h` / `afterEach(close)` setup.
 */
import { afterEach } from "vitest";
import { createHarness, type Harness } from "./supervision.ts";

export function harnessPerTest(): typeof createHarness {
  const open: Harness[] = [];
  afterEach(async () => {
    const closing = open.splice(0);
    for (const h of closing) await h.close();
  });
  return async (...args) => {
    const h = await createHarness(...args);
    open.push(h);
    return h;
  };
}

/**
 * Bounded waits for tests: every wait has a deadline and says what it waited for when it runs out.
 * `waitFor` polls for a value; for a yes/no that the test asserts itself, `waitUntil` (the
 * product's own, src/os/stop-group.ts) answers false at the deadline.
 */
export { waitUntil } from "../../src/os/stop-group.ts";

/**
 * Polls `condition` until it gives a truthy value, which it returns; throws at the deadline,
 * naming `what` (a function: computed then, to say what was last seen).
 */
export async function waitFor<T>(
  condition: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  what: string | (() => string),
  timeoutMs = 10_000,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) {
      throw new Error(`Timed out waiting for ${typeof what === "function" ? what() : what}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

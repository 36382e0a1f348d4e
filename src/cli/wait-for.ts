/** Polls a condition until it yields a value or the deadline passes (then throws `message`). */
export async function waitFor<T>(
  condition: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  timeoutMs: number,
  message: string,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() >= deadline) throw new Error(message);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Shutdowns of child process groups still in progress in this worker (a headless Pi stopped
 * after its step ended). A step does not wait for its Pi to exit before its outcome is proposed;
 * the worker waits for these, bounded, before it exits, so a normal exit leaves no Pi behind and
 * the host's reaping stays the fallback for a worker that dies.
 */
const pending = new Set<Promise<void>>();

export function trackCleanup(cleanup: Promise<void>): void {
  const tracked = cleanup.catch(() => {}).finally(() => pending.delete(tracked));
  pending.add(tracked);
}

/** Resolves when every tracked cleanup finished, or after `timeoutMs`. */
export async function settleCleanups(timeoutMs: number): Promise<void> {
  if (pending.size === 0) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    Promise.all([...pending]),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    }),
  ]);
  clearTimeout(timer);
}

/**
 * Stops children kept between nodes (the run's headless Pi, headless-pi.ts), registered by their
 * module when it loads: the run parks, waits or ends, or the worker leaves.
 */
let stopKept: (() => void) | null = null;

export function setKeptChildStopper(stop: () => void): void {
  stopKept = stop;
}

export function stopKeptChildren(): void {
  stopKept?.();
}

/**
 * The host's idle check gives retention its slice only on a tick with no work in hand, busy or
 * not: a pending deadline or a controller's next reconcile keeps the host up (busy) without
 * work in hand, and such a host must still prune; a client or a worker (work in hand) gets no
 * slice beside it.
 */
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { FakeClock } from "../../src/base/clock.ts";
import { startIdleCheck } from "../../src/host/idle-check.ts";
import { idleCheckIntervalMs } from "../../src/host/idle-tracker.ts";
import type { RetentionRunner } from "../../src/host/retention-runner.ts";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

it("ticks retention when no work is in hand, busy or not, and never beside a client or worker", async () => {
  const idleMs = 60_000;
  let ticks = 0;
  const retention = { idleTick: () => void ticks++ } as unknown as RetentionRunner;
  let busy = false;
  let working = false;
  let idled = 0;
  const timer = startIdleCheck({
    clock: new FakeClock(0),
    idleMs,
    running: () => true,
    busy: () => busy || working,
    working: () => working,
    retention,
    onIdle: () => void idled++,
  });
  const tick = () => vi.advanceTimersByTimeAsync(idleCheckIntervalMs(idleMs));
  try {
    await tick();
    expect(ticks).toBe(1);
    // A waiting run's deadline or a controller's next reconcile: busy, nothing in hand.
    busy = true;
    await tick();
    expect(ticks).toBe(2);
    // A client connected, or a worker or validation child runs: no slice.
    working = true;
    await tick();
    await tick();
    expect(ticks).toBe(2);
    working = false;
    await tick();
    expect(ticks).toBe(3);
    expect(idled).toBe(0);
  } finally {
    clearInterval(timer);
  }
});

/**
 * Decides when an idle host may exit. The host is busy while it has a connected client, an
 * active worker, a scheduled wake or unsettled work; once it has been continuously idle for the
 * idle period it stops, and the next client starts it again. Time comes from the injected clock.
 */
import type { Clock } from "../base/clock.ts";

export interface IdleTracker {
  /** Records whether the host is busy now; returns true once idle for the whole period. */
  check(busy: boolean): boolean;
}

export function createIdleTracker(clock: Clock, idleMs: number): IdleTracker {
  let idleSince: number | null = null;
  return {
    check(busy) {
      const now = clock.now();
      if (busy) {
        idleSince = null;
        return false;
      }
      idleSince ??= now;
      return now - idleSince >= idleMs;
    },
  };
}

/** How often the host samples idleness: often enough to exit close to the period, bounded. */
export function idleCheckIntervalMs(idleMs: number): number {
  return Math.min(1000, Math.max(25, Math.floor(idleMs / 4)));
}

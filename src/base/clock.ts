/**
 * Injected time and ids. Everything that reads the time or makes an id takes these, so tests
 * drive leases, deadlines and expiry with a fake clock instead of sleeping.
 */
import { randomBytes, randomUUID } from "node:crypto";

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export interface IdSource {
  /** A new unique id, optionally with a readable prefix (`run-…`). */
  next(prefix?: string): string;
  /** A new secret token (claim tokens). Never logged or stored raw. */
  token(): string;
}

export const systemClock: Clock = { now: () => Date.now() };

export const randomIds: IdSource = {
  next: (prefix) => (prefix ? `${prefix}-${randomUUID()}` : randomUUID()),
  token: () => randomBytes(32).toString("base64url"),
};

/** A clock that moves only when told to. */
export class FakeClock implements Clock {
  #now: number;
  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }
  now(): number {
    return this.#now;
  }
  advance(ms: number): void {
    this.#now += ms;
  }
  set(ms: number): void {
    this.#now = ms;
  }
}

/** Deterministic ids for tests: `prefix-1`, `prefix-2`, … */
export function sequentialIds(): IdSource {
  let n = 0;
  return {
    next: (prefix) => `${prefix ?? "id"}-${++n}`,
    token: () => `token-${++n}`,
  };
}

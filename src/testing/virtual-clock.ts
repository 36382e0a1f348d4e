/**
 * The test kit's clock: real time plus an offset that only grows. The host (in the test's
 * process) reads it directly; workers read the offset from a file (src/worker/worker-clock.ts),
 * rewritten on every move, so durable times agree across processes. Time moves only when the
 * kit decides the run waits on it: a deadline the test lets pass.
 */
import { writeFileSync } from "node:fs";
import type { Clock } from "../base/clock.ts";

export class VirtualClock implements Clock {
  #offset = 0;
  readonly file: string;

  constructor(file: string) {
    this.file = file;
    writeFileSync(file, "0");
  }

  now(): number {
    return Date.now() + this.#offset;
  }

  /** How far this clock is ahead of real time. */
  get advancedMs(): number {
    return this.#offset;
  }

  /** Moves time forward to `at` (epoch ms); never backward. */
  advanceTo(at: number): void {
    const step = at - this.now();
    if (step <= 0) return;
    this.#offset += step;
    writeFileSync(this.file, String(this.#offset));
  }
}

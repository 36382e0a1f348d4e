/**
 * The time a worker stamps on attempts (start, finish, resolved deadline). It is the system
 * clock unless the test kit (src/testing) runs the host with a virtual clock: then
 * `PI_WORKFLOWS_CLOCK_FILE` names a file holding the virtual clock's offset from real time in
 * milliseconds, which the kit rewrites whenever it moves time forward. The file is read on every
 * call because a process kept between epochs (a prepared child) outlives several moves; workers
 * read the time a few times per node, so this costs microseconds, and only in tests.
 */
import { readFileSync } from "node:fs";
import { type Clock, systemClock } from "../base/clock.ts";

export const CLOCK_FILE_ENV = "PI_WORKFLOWS_CLOCK_FILE";

export function workerClock(env: NodeJS.ProcessEnv = process.env): Clock {
  const file = env[CLOCK_FILE_ENV];
  if (!file) return systemClock;
  return { now: () => Date.now() + readOffset(file) };
}

function readOffset(file: string): number {
  try {
    const offset = Number(readFileSync(file, "utf8").trim());
    return Number.isSafeInteger(offset) ? offset : 0;
  } catch {
    return 0;
  }
}

/**
 * Bounded waits for tests: every wait has a deadline and says what it waited for when it runs out.
 * `waitFor` polls for a value; for a yes/no that the test asserts itself, `waitUntil` (the
 * product's own, src/os/stop-group.ts) answers false at the deadline. `waitWhileBusy` bounds a
 * process's progress rather than the wall time, where the time is not what a test claims.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
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

/** CPU time (ms) process `pid` has used (Linux's /proc); null where unreadable or gone. */
export function cpuTimeMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime (fields 14 and 15), in the 100-a-second ticks /proc always counts in.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/**
 * Runs `wait(idleMs)`, a wait that rejects at its deadline, again for as long as process `pid`
 * used CPU during the last one: it fails once the process went `idleMs` without any (blocked:
 * a hang) or after `capMs` in all, not because a loaded machine gave it little CPU. Where CPU time
 * cannot be read it is the one wall-time wait.
 */
export async function waitWhileBusy(
  pid: number,
  wait: (timeoutMs: number) => Promise<void>,
  idleMs: number,
  capMs: number,
): Promise<void> {
  const started = Date.now();
  let used = cpuTimeMs(pid);
  for (;;) {
    try {
      return await wait(idleMs);
    } catch (error) {
      const now = cpuTimeMs(pid);
      if (used === null || now === null || now <= used || Date.now() - started >= capMs) {
        throw error;
      }
      used = now;
    }
  }
}

/**
 * Runs a program to its end and gives its output, as `execFile` does, bounded by its progress
 * (`waitWhileBusy`): it is SIGKILLed and the call rejects, with its stderr, once it has gone
 * `idleMs` without using CPU or run `capMs` in all. A non-zero exit rejects too.
 */
export async function runWhileBusy(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; idleMs: number; capMs: number },
): Promise<string> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d) => (stdout += d));
  child.stderr!.setEncoding("utf8").on("data", (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve(signal === null ? code : null));
  });
  const what = `${command} ${args.slice(0, 2).join(" ")}`;
  try {
    await waitWhileBusy(
      child.pid!,
      (ms) =>
        new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`${what}: no CPU used in ${ms} ms`)), ms);
          exited.then(() => resolve(), reject).finally(() => clearTimeout(timer));
        }),
      options.idleMs,
      options.capMs,
    );
  } catch (error) {
    if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, "SIGKILL");
    await exited.catch(() => undefined);
    throw new Error(`${(error as Error).message}: ${stderr.slice(-500)}`);
  }
  const code = await exited;
  if (code !== 0) throw new Error(`${what} exited ${code ?? "by a signal"}: ${stderr.slice(-500)}`);
  return stdout;
}

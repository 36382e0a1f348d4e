/**
 * Bounded waits for tests: every wait has a deadline and says what it waited for when it runs out.
 * `waitFor` polls for a value; for a yes/no that the test asserts itself, `waitUntil` (the
 * product's own, src/os/stop-group.ts) answers false at the deadline. `waitWhileBusy` bounds a
 * process's progress rather than the wall time, where the time is not what a test claims.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
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

/**
 * CPU time (ms) process `pid` has used (Linux's /proc); null where unreadable or gone. From
 * schedstat's nanoseconds on CPU where the kernel keeps them: stat's utime and stime move in
 * 10 ms ticks, which a niced process beside CPU burners (~5 ms a second) may not reach in a
 * whole idle window, and would look blocked under exactly the load this is for.
 */
export function cpuTimeMs(pid: number): number | null {
  // Summed over its threads: the process's own schedstat counts its main thread only.
  let onCpuNs: number | null = null;
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      try {
        const ns = Number(
          readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0],
        );
        if (Number.isFinite(ns)) onCpuNs = (onCpuNs ?? 0) + ns;
      } catch {
        // A thread that ended meanwhile, or a kernel without schedstat (then stat answers).
      }
    }
  } catch {
    return null;
  }
  if (onCpuNs !== null) return onCpuNs / 1e6;
  const fields = statFields(pid);
  // utime and stime (fields 14 and 15), in the 100-a-second ticks /proc always counts in.
  return fields === null ? null : (Number(fields[11]) + Number(fields[12])) * 10;
}

/** /proc/<pid>/stat's fields from the state (field 3) on; null where unreadable or gone. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/**
 * CPU time (ms) the processes of group `pgid` have used, summed; null where none is left. A
 * wrapper (npm running a script) waits idle while its children work: the group is the work.
 */
export function groupCpuTimeMs(pgid: number): number | null {
  let sum: number | null = null;
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    // The process group (field 5); a zombie's CPU has been counted and may vanish any moment.
    const fields = Number.isInteger(pid) ? statFields(pid) : null;
    if (fields === null || Number(fields[2]) !== pgid || fields[0] === "Z") continue;
    sum = (sum ?? 0) + (cpuTimeMs(pid) ?? 0);
  }
  return sum;
}

/**
 * Runs `wait(idleMs)`, a wait that rejects at its deadline, again for as long as process `pid`
 * used CPU during the last one: it fails once the process went `idleMs` without any (blocked:
 * a hang) or after `capMs` in all, not because a loaded machine gave it little CPU. Where CPU time
 * cannot be read it is the one wall-time wait.
 */
export function waitWhileBusy(
  pid: number,
  wait: (timeoutMs: number) => Promise<void>,
  idleMs: number,
  capMs: number,
): Promise<void> {
  return waitWhileProgress(() => cpuTimeMs(pid), wait, idleMs, capMs);
}

/**
 * `waitWhileBusy` on any CPU counter: a change either way is progress (a group's sum drops when a
 * member exits, which is work done too). No wait runs past `capMs` from the start.
 */
async function waitWhileProgress(
  used: () => number | null,
  wait: (timeoutMs: number) => Promise<void>,
  idleMs: number,
  capMs: number,
): Promise<void> {
  const started = Date.now();
  let last = used();
  for (;;) {
    try {
      return await wait(Math.max(1, Math.min(idleMs, started + capMs - Date.now())));
    } catch (error) {
      const now = used();
      if (last === null || now === null || now === last || Date.now() - started >= capMs) {
        throw error;
      }
      last = now;
    }
  }
}

/** How long `runWhileBusy` waits for the pipes' end once its program's group is stopped. */
const PIPES_CLOSE_MS = 5_000;

/**
 * Runs a program to its end and gives its output, as `execFile` does, bounded by its progress
 * (`waitWhileBusy` over its process group, where a wrapper's children do the work): the group is
 * SIGKILLed and the call rejects, with its stderr, once it has gone `idleMs` without using CPU or
 * run `capMs` in all. A non-zero exit rejects too. Whatever of the group outlives the program (an
 * npm script's child holding its pipes) is stopped when it ends: nothing outlives the call.
 */
export async function runWhileBusy(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; idleMs: number; capMs: number },
): Promise<string> {
  // Detached: a group of its own (its pgid is its pid), to count and to stop as one.
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d) => (stdout += d));
  child.stderr!.setEncoding("utf8").on("data", (d) => (stderr += d));
  // 'exit', not 'close': 'close' waits for every holder of the pipes, which may never end.
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve(signal === null ? code : null));
  });
  const closed = new Promise<void>((resolve) => child.on("close", () => resolve()));
  const pid = child.pid;
  // A failed spawn (ENOENT) has no pid: its 'error' is the answer.
  if (pid === undefined) return exited.then(() => stdout);
  const what = `${command} ${args.slice(0, 2).join(" ")}`;
  const stopGroup = async () => {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // ESRCH: the group has no process left.
    }
    await exited.catch(() => undefined);
    // Its output to the end, unless a process that left the group still holds the pipes.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([closed, new Promise((r) => (timer = setTimeout(r, PIPES_CLOSE_MS)))]);
    clearTimeout(timer);
    child.stdout!.destroy();
    child.stderr!.destroy();
  };
  try {
    await waitWhileProgress(
      () => groupCpuTimeMs(pid),
      (ms) =>
        new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`${what}: no CPU used in ${ms} ms`)), ms);
          exited.then(() => resolve(), reject).finally(() => clearTimeout(timer));
        }),
      options.idleMs,
      options.capMs,
    );
  } catch (error) {
    await stopGroup();
    throw new Error(`${(error as Error).message}: ${stderr.slice(-500)}`);
  }
  await stopGroup();
  const code = await exited;
  if (code !== 0) throw new Error(`${what} exited ${code ?? "by a signal"}: ${stderr.slice(-500)}`);
  return stdout;
}

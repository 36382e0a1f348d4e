/**
 * `waitWhileBusy` (wait.ts): a wait bounded by a process's progress. A process that keeps using CPU
 * is waited for past the idle deadline (a loaded machine starts it slowly); one that uses none for
 * that long fails the wait (it is blocked), whatever it would print later. `runWhileBusy` runs a
 * program to its end under the same bound.
 */
import { spawn } from "node:child_process";
import { afterEach, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { cpuTimeMs, runWhileBusy, waitUntil, waitWhileBusy } from "./wait.ts";

const children: ReturnType<typeof spawn>[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

/** A Node child that runs `code`; `until(ms)` waits for "ready" on its stderr, rejecting at `ms`. */
function child(code: string) {
  const proc = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "ignore", "pipe"] });
  children.push(proc);
  let err = "";
  proc.stderr!.on("data", (d) => (err += d));
  const until = (ms: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("Timed out waiting for 'ready'")), ms);
      const check = () => {
        if (!err.includes("ready")) return;
        clearTimeout(timer);
        resolve();
      };
      proc.stderr!.on("data", check);
      check();
    });
  return { pid: proc.pid!, until, printed: () => err.includes("ready") };
}

it.skipIf(cpuTimeMs(process.pid) === null)(
  "waits past the idle deadline while the process uses CPU, and fails once it uses none",
  async () => {
    // Busy for 3 s of wall time, then ready: a 1 s wall-time wait misses it, this one does not.
    const busy = child(
      "const end = Date.now() + 3000; while (Date.now() < end); console.error('ready')",
    );
    await expect(busy.until(1_000)).rejects.toThrow("Timed out");
    await waitWhileBusy(busy.pid, busy.until, 1_000, 60_000);
    expect(busy.printed()).toBe(true);
    // Asleep for 30 s, then ready: the wait fails after its first second without CPU
    // (its Node start's CPU may extend it once).
    const asleep = child("setTimeout(() => console.error('ready'), 30_000)");
    await expect(waitWhileBusy(asleep.pid, asleep.until, 1_000, 60_000)).rejects.toThrow(
      "Timed out",
    );
    expect(asleep.printed()).toBe(false);
  },
);

it.skipIf(cpuTimeMs(process.pid) === null)(
  "runWhileBusy gives a program's output, and kills one that uses no CPU for its idle time",
  async () => {
    const node = process.execPath;
    const bounds = { idleMs: 1_000, capMs: 60_000 };
    expect(await runWhileBusy(node, ["-e", "console.log('out')"], bounds)).toBe("out\n");
    await expect(runWhileBusy(node, ["-e", "console.error('bad'); process.exit(3)"], bounds))
      .rejects.toThrow(/exited 3: bad/);
    let pid = 0;
    const asleep = runWhileBusy(node, [
      "-e",
      "console.error(process.pid); setTimeout(() => {}, 30_000)",
    ], bounds)
      .catch((error: Error) => {
        pid = Number(/: (\d+)/.exec(error.message)?.[1]);
        throw error;
      });
    await expect(asleep).rejects.toThrow("no CPU used in 1000 ms");
    // Else NaN, whose CPU time is null too: the check below would pass on nothing.
    expect(pid).toBeGreaterThan(0);
    expect(cpuTimeMs(pid)).toBeNull();
  },
);

it.skipIf(cpuTimeMs(process.pid) === null)(
  "counts CPU time finer than stat's 10 ms ticks, and no wait runs past the cap",
  async () => {
    // A niced process beside CPU burners gets a few ms a second: ticks would not show them.
    expect(cpuTimeMs(process.pid)! % 10).not.toBe(0);
    const busy = child("const end = Date.now() + 4000; while (Date.now() < end);");
    const asked: number[] = [];
    const never = (ms: number) => {
      asked.push(ms);
      return new Promise<void>((_, reject) => setTimeout(() => reject(new Error("late")), ms));
    };
    await expect(waitWhileBusy(busy.pid, never, 1_000, 1_500)).rejects.toThrow("late");
    // The second wait is what is left of the cap, not a whole idle time (1 ms for timer rounding).
    expect(asked.length).toBeGreaterThan(1);
    expect(asked.reduce((a, b) => a + b)).toBeLessThanOrEqual(1_501);
  },
);

/** Whether `pid` runs (a zombie is as good as gone: its parent is init, which reaps late here). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

it.skipIf(cpuTimeMs(process.pid) === null)(
  "runWhileBusy ends with its program though a child holds its pipes, stops that child, and " +
    "counts a working child's CPU as the program's",
  async () => {
    const node = process.execPath;
    const bounds = { idleMs: 1_000, capMs: 60_000 };
    // The program leaves a child that holds its stdout and stderr for a minute (an npm script's).
    const leaving = await runWhileBusy(node, [
      "-e",
      `const c = require("node:child_process").spawn(process.execPath,
         ["-e", "setTimeout(() => {}, 60_000)"], { stdio: "inherit" });
       c.unref();
       console.log(c.pid);`,
    ], bounds);
    const orphan = Number(leaving);
    expect(orphan).toBeGreaterThan(0);
    expect(await waitUntil(() => !running(orphan), 5_000)).toBe(true);
    // A wrapper idle for 1.5 s while its child works: not a hang.
    expect(
      await runWhileBusy(node, [
        "-e",
        `require("node:child_process").spawnSync(process.execPath,
           ["-e", "const end = Date.now() + 1500; while (Date.now() < end);"]);
         console.log("done");`,
      ], bounds),
    ).toBe("done\n");
    // A program that is not there: the spawn's own error.
    await expect(runWhileBusy(`${node}-not-there`, [], bounds)).rejects.toThrow(/ENOENT/);
  },
);

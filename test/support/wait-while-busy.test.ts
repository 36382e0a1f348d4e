/**
 * `waitWhileBusy` (wait.ts): a wait bounded by a process's progress. A process that keeps using CPU
 * is waited for past the idle deadline (a loaded machine starts it slowly); one that uses none for
 * that long fails the wait (it is blocked), whatever it would print later. `runWhileBusy` runs a
 * program to its end under the same bound.
 */
import { spawn } from "node:child_process";
import { afterEach, expect, it } from "vitest";
import { cpuTimeMs, runWhileBusy, waitWhileBusy } from "./wait.ts";

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
    expect(cpuTimeMs(pid)).toBeNull();
  },
);

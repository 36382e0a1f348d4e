/**
 * What the retention benchmark reads of the machine (Linux /proc; zeros elsewhere): a thread's
 * time on a CPU and in the run queue, its storage I/O, and time the machine took from it unseen.
 */
import { readFileSync } from "node:fs";
import { round } from "./_figures.ts";

/** The main thread's time on a CPU and waiting for one (Linux /proc; zeros elsewhere). */
export function schedstat(): { cpuMs: number; waitMs: number } {
  try {
    const [cpu, wait] = readFileSync("/proc/thread-self/schedstat", "utf8").split(" ").map(Number);
    return { cpuMs: cpu / 1e6, waitMs: wait / 1e6 };
  } catch {
    return { cpuMs: 0, waitMs: 0 };
  }
}

/**
 * The main thread's I/O so far (Linux /proc; zeros elsewhere): bytes it read from and caused to
 * be written to storage (not the page cache's), and its read and write calls.
 */
export function threadIo(): {
  readBytes: number;
  writeBytes: number;
  reads: number;
  writes: number;
} {
  try {
    const text = readFileSync("/proc/thread-self/io", "utf8");
    const field = (name: string) =>
      Number(new RegExp(`^${name}: (\\d+)`, "m").exec(text)?.[1] ?? 0);
    return {
      readBytes: field("read_bytes"),
      writeBytes: field("write_bytes"),
      reads: field("syscr"),
      writes: field("syscw"),
    };
  } catch {
    return { readBytes: 0, writeBytes: 0, reads: 0, writes: 0 };
  }
}

/**
 * Time the guest kernel counts as a thread's CPU but the thread did not run: on this machine's
 * virtual CPUs `/proc/stat` reports no steal and interrupt time is charged to whichever thread
 * was running (no `CONFIG_IRQ_TIME_ACCOUNTING`), so a transaction can show tens of ms "on a CPU"
 * in a statement of one row. `stallProbe`: a busy loop in 1 ms windows (one schedstat read each), for `ms`:
 * the windows that took 5 ms or more, and of those the ones the kernel counted 10 ms or more on a
 * CPU (not in its run queue; a running thread's count lags by up to a tick, 4 ms at HZ=250). `cpuTicks`: the jiffies all CPUs accounted so far (user to softirq); their
 * shortfall against wall time over the pass is time the guest never saw.
 */
export function stallProbe(ms: number) {
  const end = performance.now() + ms;
  const worst: { ms: number; cpuMs: number; runQueueMs: number }[] = [];
  let windows = 0;
  let over5 = 0;
  let cpuOver10 = 0;
  let before = schedstat();
  let started = performance.now();
  while (started < end) {
    let now = performance.now();
    while (now - started < 1) now = performance.now();
    const after = schedstat();
    const wall = now - started;
    windows++;
    if (wall >= 5) {
      over5++;
      const cpuMs = after.cpuMs - before.cpuMs;
      if (cpuMs >= 10) cpuOver10++;
      worst.push({
        ms: round(wall),
        cpuMs: round(cpuMs),
        runQueueMs: round(after.waitMs - before.waitMs),
      });
      worst.sort((a, b) => b.cpuMs - a.cpuMs);
      if (worst.length > 5) worst.pop();
    }
    before = after;
    started = performance.now();
  }
  return { ms, windows, over5ms: over5, onCpuOver10ms: cpuOver10, worst };
}

export function cpuTicks(): number {
  try {
    const fields = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(
      1,
      8,
    );
    return fields.reduce((sum, v) => sum + Number(v), 0);
  } catch {
    return 0;
  }
}

/**
 * CPU time of another process of this machine (a run's worker), read from `/proc/PID/stat`, so a
 * bench can show the worker's cost per node beside the host's own `process.cpuUsage()`. Linux
 * only: null elsewhere or once the process is gone. `/proc` counts in USER_HZ ticks, which Linux
 * fixes at 100 per second for user space: 10 ms resolution, so take it over seconds of work.
 */
import { readFileSync } from "node:fs";

const MS_PER_TICK = 10;

/** User + system CPU of `pid` so far, in ms; null when it cannot be read. */
export function processCpuMs(pid: number): number | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name (field 2) may hold spaces: fields are counted after the last ")".
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? ticks * MS_PER_TICK : null;
}

/** Samples of one process's CPU over time, kept as (epoch ms, CPU ms) pairs. */
export interface CpuSamples {
  sample(): void;
  /** CPU µs per event between the first and the last sample; null with fewer than 2 samples. */
  perEvent(eventTimes: number[]): number | null;
}

export function cpuSamples(pid: number | null): CpuSamples {
  const samples: Array<{ at: number; cpuMs: number }> = [];
  return {
    sample() {
      const cpuMs = pid === null ? null : processCpuMs(pid);
      if (cpuMs !== null) samples.push({ at: Date.now(), cpuMs });
    },
    perEvent(eventTimes) {
      if (samples.length < 2) return null;
      const first = samples[0];
      const last = samples[samples.length - 1];
      const events = eventTimes.filter((t) => t > first.at && t <= last.at).length;
      return events === 0 ? null : ((last.cpuMs - first.cpuMs) * 1000) / events;
    },
  };
}

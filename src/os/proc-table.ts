/**
 * The Linux process backend: a live view of `/proc`. Each query reads the kernel's current
 * answer (a few microseconds, no other process), so a view never goes stale and taking one
 * costs nothing.
 */
import { readdirSync, readFileSync } from "node:fs";
import type { ProcessStat, ProcessTable } from "./process-table.ts";

export const procTable: ProcessTable = {
  stat: readProcStat,
  all: listProcStats,
  residentBytes: readProcResidentBytes,
};

/** Reads `/proc/PID/stat`; null when the process does not exist (or /proc is unavailable). */
export function readProcStat(pid: number): ProcessStat | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name (field 2) may hold spaces and parentheses: split after the LAST ")".
  const close = text.lastIndexOf(")");
  if (close < 0) return null;
  const fields = text.slice(close + 2).trim().split(" ");
  if (fields.length < 20) return null;
  return {
    pid,
    state: fields[0],
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    startTime: fields[19],
  };
}

function listProcStats(): ProcessStat[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const stats: ProcessStat[] = [];
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readProcStat(Number(name));
    if (stat !== null) stats.push(stat);
  }
  return stats;
}

/** `VmRSS` from `/proc/PID/status`; null when the process is gone. */
function readProcResidentBytes(pid: number): number | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return null;
  }
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(text);
  // A zombie has no VmRSS line: it holds no memory.
  return match ? Number(match[1]) * 1024 : 0;
}

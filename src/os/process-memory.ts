/**
 * Resident memory of a process, for the host's per-worker memory cap: `VmRSS` from
 * `/proc/PID/status` (Linux only, like the process identity in process-identity.ts).
 */
import { readFileSync } from "node:fs";

/** Resident bytes of `pid`, or null when it is gone. */
export function readResidentBytes(pid: number): number | null {
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

/**
 * Resident memory of processes, for the host's per-worker memory cap: `VmRSS` under the `/proc`
 * backend, `ps` `rss` under the `ps` backend. One table serves every worker of a supervision
 * tick (a shared read: see ps-table.ts).
 */
import { processBackend } from "./process-backend.ts";
import { type ProcessIdentity, ProcessTableUnavailable } from "./process-table.ts";

/**
 * Resident bytes of each process (null when it is gone, or its PID names another process now);
 * an unreadable table answers null for all.
 */
export async function readResidentBytes(
  identities: ProcessIdentity[],
): Promise<(number | null)[]> {
  try {
    const table = await processBackend().table();
    return identities.map(({ pid, startTime }) =>
      table.stat(pid)?.startTime === startTime ? table.residentBytes(pid) : null
    );
  } catch (error) {
    if (error instanceof ProcessTableUnavailable) return identities.map(() => null);
    throw error;
  }
}

/**
 * The process proof behind a fast takeover: the host records its pid and start identity in the
 * host claim, and a starting host treats a live claim as free when no process with exactly that
 * identity runs any more (killed, crashed; a zombie counts as gone). A reused pid has another
 * start time, so it never passes for the old holder; a holder that is alive but silent keeps its
 * lease. Where the process table cannot be read the proof is unavailable and only the lease
 * counts.
 */
import {
  formatStartIdentity,
  parseStartIdentity,
  type ProcessTable,
  processTable,
} from "../os/process-identity.ts";
import { liveIdentity, sameProcessAlive } from "../os/process-table.ts";
import type { AcquireHostClaimOptions } from "../state/host-claim.ts";

/** One table read before the claim is taken: the claim's own transaction asks it synchronously. */
export async function hostProcessProof(
  pid: number = process.pid,
): Promise<Pick<AcquireHostClaimOptions, "process" | "holderGone">> {
  let table: ProcessTable;
  try {
    table = await processTable({ fresh: true });
  } catch {
    return { process: null };
  }
  const own = liveIdentity(table, pid);
  if (own === null) return { process: null };
  return {
    process: { pid: own.pid, startIdentity: formatStartIdentity(own) },
    holderGone: (startIdentity) => {
      const holder = parseStartIdentity(startIdentity);
      return holder !== null && !sameProcessAlive(table, holder);
    },
  };
}

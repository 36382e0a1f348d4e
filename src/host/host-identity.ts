/**
 * The process proof behind a fast takeover: the host records its pid and start identity in the
 * host claim, and a starting host treats a live claim as free when no process with exactly that
 * identity runs any more (killed, crashed; a zombie counts as gone). A reused pid has another
 * start time, so it never passes for the old holder; a holder that is alive but silent keeps its
 * lease. Where `/proc` cannot be read the proof is unavailable and only the lease counts.
 */
import {
  formatStartIdentity,
  isSameProcessAlive,
  parseStartIdentity,
  readProcessIdentity,
} from "../os/process-identity.ts";
import type { AcquireHostClaimOptions } from "../state/host-claim.ts";

export function hostProcessProof(
  pid: number = process.pid,
): Pick<AcquireHostClaimOptions, "process" | "holderGone"> {
  const own = readProcessIdentity(pid);
  if (own === null) return { process: null };
  return {
    process: { pid: own.pid, startIdentity: formatStartIdentity(own) },
    holderGone: (startIdentity) => {
      const holder = parseStartIdentity(startIdentity);
      return holder !== null && !isSameProcessAlive(holder);
    },
  };
}

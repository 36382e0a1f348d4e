/**
 * Shell command groups under host supervision. Right after a shell node spawns its command (in
 * its own process group) the worker registers that group with the host (`worker.progress`,
 * `process.register`, exact PID and start time) and waits for the verdict before the command is
 * awaited, so a SIGKILLed worker cannot leave the command running: the host reaps registered
 * groups when their worker exits, and after a host restart. Once the shell runner has shut the
 * group down, the worker unregisters it.
 */
import type { ProcessGroupHooks } from "../workflows/engine.ts";
import { isSameProcessAlive, readProcessIdentity } from "../os/process-identity.ts";
import { ClaimLostStop, ProposalRejected, type Proposer } from "./proposer.ts";

export function createProcessGroupPort(
  proposer: Proposer,
  onClaimLost: (stop: ClaimLostStop) => void,
): ProcessGroupHooks {
  const registered = new Map<number, string>();
  return {
    async started(pid) {
      const identity = await readProcessIdentity(pid);
      // Already exited: the runner kills whatever is left of its group at once.
      if (identity === null) return;
      try {
        await proposer.propose("worker.progress", {
          op: "process.register",
          pid,
          startTime: identity.startTime,
          processGroup: pid,
        });
      } catch (error) {
        if (error instanceof ClaimLostStop) onClaimLost(error);
        // A quick command may end, and be reaped, before the host looks at /proc: the host then
        // refuses it, yet there is nothing left to supervise (the runner kills what is left of
        // its group as soon as it sees the exit).
        if (error instanceof ProposalRejected && !(await isSameProcessAlive(identity))) return;
        throw error;
      }
      registered.set(pid, identity.startTime);
    },
    async stopped(pid) {
      const startTime = registered.get(pid);
      if (startTime === undefined) return;
      registered.delete(pid);
      await proposer.propose("worker.progress", { op: "process.unregister", pid, startTime });
    },
  };
}

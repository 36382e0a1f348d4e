/**
 * Deadlines of interactive requests while no worker runs, as a kind of the host deadline timer:
 * when a waiting model step's durable deadline passes, one control claim closes the stale
 * request and records the attempt `timed_out` (`timeOutInteraction`), and the scheduler launches
 * a new worker generation that follows a `$result.outcome` edge or ends the run `timed_out`
 * (which releases the session reservation). The timer applies what is due at start-up before
 * anything is scheduled (recovery step 8).
 */
import { crashPoint } from "../base/crash-point.ts";
import { listDueInteractions, nextInteractionDeadline } from "../state/interaction-queries.ts";
import { timeOutInteraction } from "../state/transitions/interaction-verdicts.ts";
import type { DeadlineKind } from "./deadline-timer.ts";

export const interactionTimeoutDeadline: DeadlineKind = {
  name: "interactionTimeout",
  nextDue: nextInteractionDeadline,
  applyDue(rt, now, limit) {
    const due = listDueInteractions(rt.store, now, limit);
    for (const { interactionId, runId } of due) {
      const closed = timeOutInteraction(rt.store, {
        interactionId,
        ownerId: rt.ownerId,
        ttlMs: 1_000,
      });
      if (closed === null) {
        // Settled or cancelled between the read and the write: nothing left to time out.
        rt.log("interactionTimeout.skipped", { runId });
        continue;
      }
      crashPoint("host.interactionTimeout.afterCommit");
      rt.log("interactionTimeout.applied", { runId, revision: closed.revision });
      rt.wake();
    }
    return due.length;
  },
};

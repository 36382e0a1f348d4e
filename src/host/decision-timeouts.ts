/**
 * The deadlines of runs waiting for a person, as kinds of the host deadline timer:
 *   decisionDefault  a human decision's saved `onTimeout` default is recorded at its deadline
 *                    (`applyDecisionDefault`: control claim, default, interaction closed, claim
 *                    released, run launchable, in one transaction)
 *   waitTimeout      a checkpoint's or decision's own `timeoutMs` passed while it waited: the
 *                    attempt ends `timed_out` (`timeOutWaitingAttempt`) and the next worker
 *                    follows `$result.outcome` or ends the run `timed_out`
 * No worker is alive while these runs wait and no workflow code runs in the host: the default
 * was normalized by the worker when the run started waiting.
 */
import { crashPoint } from "../base/crash-point.ts";
import {
  dueDecisionDefaults,
  dueWaitTimeouts,
  nextDecisionDefaultAt,
  nextWaitTimeoutAt,
} from "../state/decision-deadlines.ts";
import {
  applyDecisionDefault,
  type ClosedDecision,
  timeOutWaitingAttempt,
} from "../state/transitions/decisions.ts";
import type { DeadlineKind, DeadlineRuntime } from "./deadline-timer.ts";

export const decisionDefaultDeadline: DeadlineKind = {
  name: "decisionDefault",
  nextDue: nextDecisionDefaultAt,
  applyDue(rt, now, limit) {
    const due = dueDecisionDefaults(rt.store, now, limit);
    for (const { decisionId, runId } of due) {
      apply(rt, "decisionDefault", runId, () =>
        applyDecisionDefault(rt.store, {
          decisionId,
          ownerId: rt.ownerId,
          beforeCommit: () => crashPoint("host.decisionDefault.beforeCommit"),
        }));
    }
    return due.length;
  },
};

export const waitTimeoutDeadline: DeadlineKind = {
  name: "waitTimeout",
  nextDue: nextWaitTimeoutAt,
  applyDue(rt, now, limit) {
    const due = dueWaitTimeouts(rt.store, now, limit);
    for (const { attemptId, runId } of due) {
      apply(rt, "waitTimeout", runId, () =>
        timeOutWaitingAttempt(rt.store, {
          attemptId,
          ownerId: rt.ownerId,
          beforeCommit: () => crashPoint("host.waitTimeout.beforeCommit"),
        }));
    }
    return due.length;
  },
};

function apply(
  rt: DeadlineRuntime,
  name: string,
  runId: string,
  close: () => ClosedDecision | null,
): void {
  const closed = close();
  if (closed === null) {
    // Answered or cancelled between the read and the write: nothing left to do.
    rt.log(`${name}.skipped`, { runId });
    return;
  }
  crashPoint(`host.${name}.afterCommit`);
  rt.log(`${name}.applied`, {
    runId,
    revision: closed.revision,
    generation: closed.generation,
  });
  rt.wake();
}

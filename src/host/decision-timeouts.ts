/**
 * Human decisions with a saved `onTimeout` default: when the deadline passes, the host records
 * the default (`timeoutDefault` resolution) and makes the run launchable again, with no worker
 * alive while the run waits. The host checks on a short timer and once at start-up (after
 * recovery), so a deadline that passed while no host ran is applied as soon as one starts.
 */
import { listDecisionDeadlines } from "../state/decision-deadlines.ts";
import { answerDecision } from "../state/transitions/decisions.ts";
import type { HostRuntime } from "./host-runtime.ts";

type DecisionRuntime = Pick<HostRuntime, "store" | "clock" | "supervision" | "log">;

/** Applies every due default; returns how many it applied. */
export function applyDueDecisionDefaults(rt: DecisionRuntime): number {
  const now = rt.clock.now();
  let applied = 0;
  for (const due of listDecisionDeadlines(rt.store)) {
    if (due.dueAt > now) break;
    try {
      const { revision } = answerDecision(rt.store, {
        decisionId: due.decisionId,
        answer: due.response,
        resolution: "timeoutDefault",
      });
      rt.log("decision.timeoutDefault", { runId: due.runId, revision });
      applied++;
    } catch (error) {
      // Answered or cancelled between the read and the write: nothing left to default.
      rt.log("decision.timeoutSkipped", {
        runId: due.runId,
        reason: error instanceof Error ? error.name : "Error",
      });
    }
  }
  if (applied > 0) rt.supervision.wake();
  return applied;
}

/** Whether a pending decision deadline should keep the host alive (a scheduled wake). */
export function hasDecisionDeadline(rt: Pick<HostRuntime, "store">): boolean {
  return listDecisionDeadlines(rt.store).length > 0;
}

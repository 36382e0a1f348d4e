/**
 * Saved `onTimeout` defaults of pending human decisions. The worker stores each waiting
 * decision's request with its already-normalized default (`onTimeout: {afterMs, response}`); the
 * deadline is the decision's creation time plus `afterMs`. The host applies due defaults with
 * `answerDecision(..., resolution: "timeoutDefault")`, so no workflow code runs in the host and
 * no worker is needed while the run waits.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { queryAll, type StateStore } from "./store.ts";

export interface DecisionDeadline {
  decisionId: string;
  runId: string;
  dueAt: number;
  /** The normalized default response to record at `dueAt`. */
  response: JsonValue;
}

/** Every pending human decision that has a saved default, earliest deadline first. */
export function listDecisionDeadlines(store: StateStore): DecisionDeadline[] {
  const rows = queryAll<
    { decision_id: string; run_id: string; created_at: number; request_json: string }
  >(
    store,
    "SELECT decision_id, run_id, created_at, request_json FROM human_decisions " +
      "WHERE state = 'pending' AND kind = 'humanDecision'",
  );
  const deadlines: DecisionDeadline[] = [];
  for (const row of rows) {
    let onTimeout: { afterMs?: unknown; response?: unknown } | null | undefined;
    try {
      onTimeout = (JSON.parse(row.request_json) as { onTimeout?: typeof onTimeout }).onTimeout;
    } catch {
      continue; // written by this build as canonical JSON: unreadable means no default
    }
    if (!onTimeout || typeof onTimeout.afterMs !== "number" || onTimeout.response === undefined) {
      continue;
    }
    deadlines.push({
      decisionId: row.decision_id,
      runId: row.run_id,
      dueAt: row.created_at + onTimeout.afterMs,
      response: onTimeout.response as JsonValue,
    });
  }
  return deadlines.sort((a, b) => a.dueAt - b.dueAt);
}

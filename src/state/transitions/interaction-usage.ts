/**
 * An interactive step's usage as its origin session's extension summed it (the assistant
 * messages since the step was shown), set on the waiting attempt inside the write that carries
 * it (a submission, an update, a reminder), so it costs no commit of its own. The extension
 * sends the whole sum each time and the sum only grows: a late or repeated request never lowers
 * it, and nothing is counted twice.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { StepUsage } from "../../protocol/step-usage.ts";
import { usageColumns, usageSums } from "../run-spend.ts";
import { type StateStore } from "../store.ts";
import { executeArgs, queryOneArgs } from "../statements.ts";

export function setWaitingAttemptUsage(
  store: StateStore,
  attemptId: string,
  usage: StepUsage | undefined,
): void {
  if (usage === undefined) return;
  const columns = usageColumns(usage);
  executeArgs(
    store,
    "UPDATE node_attempts SET usage_json = ?1, usage_tokens = ?2, usage_cost = ?3 " +
      "WHERE attempt_id = ?4 AND state = 'waiting' AND (usage_tokens IS NULL OR usage_tokens <= ?2)",
    columns.json,
    columns.tokens,
    columns.cost,
    attemptId,
  );
}

/**
 * The attempt's usage sums for the event that closes an interactive step (`{usage}`, or nothing
 * when it used none), as `node.finished` carries a headless step's: followers (`--wait`) show it.
 */
export function closingUsage(
  store: StateStore,
  attemptId: string,
): { usage?: { [key: string]: JsonValue } } {
  const row = queryOneArgs<{ usage_tokens: number | null; usage_cost: number | null }>(
    store,
    "SELECT usage_tokens, usage_cost FROM node_attempts WHERE attempt_id = ?1",
    attemptId,
  );
  return row?.usage_tokens == null
    ? {}
    : { usage: usageSums({ tokens: row.usage_tokens, cost: row.usage_cost }) };
}

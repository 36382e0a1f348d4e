/**
 * Read-only views of the Pi outbox (fine on a read-only store): a run's notifications, for
 * `run.status` and the viewer (a headless run's notifications have no session to go to, so this
 * is where they are read), and what the host needs to write a turn's text.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { type StateStore } from "./store.ts";
import { queryAll, queryOne } from "./statements.ts";
import { decodeValue } from "./values.ts";

export interface NotificationView {
  notificationId: string;
  nodeId: string;
  kind: "progress" | "final";
  message: string;
  /** `pending` (not shown yet, or no session to show it in), `claimed`, `delivered`. */
  state: "pending" | "claimed" | "delivered";
  createdAt: number;
  deliveredAt: number | null;
}

/** The run's latest `limit` notifications, oldest first. */
export function listRunNotifications(
  store: StateStore,
  runId: string,
  limit = 20,
): NotificationView[] {
  const rows = queryAll<{
    notification_id: string;
    node_id: string;
    kind: "progress" | "final";
    message: string;
    state: "pending" | "claimed" | "delivered";
    created_at: number;
    delivered_at: number | null;
  }>(
    store,
    "SELECT notification_id, node_id, kind, message, state, created_at, delivered_at FROM " +
      "notifications WHERE run_id = :runId ORDER BY created_at DESC, rowid DESC LIMIT :limit",
    { runId, limit },
  );
  return rows.reverse().map((r) => ({
    notificationId: r.notification_id,
    nodeId: r.node_id,
    kind: r.kind,
    message: r.message,
    state: r.state,
    createdAt: r.created_at,
    deliveredAt: r.delivered_at,
  }));
}

/** The committed facts a turn's text is written from. */
export interface TurnRunFacts {
  runId: string;
  workflowName: string;
  title: string | null;
  state: string;
  output: JsonValue | undefined;
  error: { code: string; message: string } | null;
  /**
   * What a waiting run waits for (a checkpoint or a person's decision), at which node, and its
   * request (a checkpoint's `{summary}` or `run()` output; a decision's request).
   */
  waiting: { kind: "checkpoint" | "humanDecision"; nodeId: string; request: JsonValue } | null;
}

export function readTurnRunFacts(store: StateStore, runId: string): TurnRunFacts | undefined {
  const row = queryOne<{
    workflow_name: string;
    title: string | null;
    state: string;
    output_json: string | null;
    error_code: string | null;
    error_message: string | null;
    waiting_kind: "checkpoint" | "humanDecision" | null;
    waiting_node: string | null;
    waiting_request: string | null;
  }>(
    store,
    "SELECT r.workflow_name, r.title, r.state, r.output_json, r.error_code, r.error_message, " +
      "d.kind AS waiting_kind, d.node_id AS waiting_node, d.request_json AS waiting_request " +
      "FROM runs r LEFT JOIN human_decisions d " +
      "ON d.run_id = r.run_id AND d.state = 'pending' WHERE r.run_id = :runId",
    { runId },
  );
  if (!row) return undefined;
  return {
    runId,
    workflowName: row.workflow_name,
    title: row.title,
    state: row.state,
    output: decodeValue(row.output_json),
    error: row.error_code === null
      ? null
      : { code: row.error_code, message: row.error_message ?? "" },
    waiting: row.waiting_kind === null ? null : {
      kind: row.waiting_kind,
      nodeId: row.waiting_node!,
      request: decodeValue(row.waiting_request) ?? null,
    },
  };
}

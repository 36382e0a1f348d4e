/**
 * Read queries for `controller.list` and `controller.get` (fine on a read-only store). Views hold
 * names, keys, versions, states and codes; specs and statuses only in the one resource `get`
 * returns to the caller who owns it.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { ControllerResource } from "../../protocol/controller-resource.ts";
import { type StateStore } from "../store.ts";
import { queryAll, queryOne } from "../statements.ts";
import { decodeValue } from "../values.ts";
import {
  findController,
  findLiveResource,
  type ResourceRow,
  resourceSelect,
  toResource,
} from "./controller-records.ts";
import { readChildRef } from "./child-workflows.ts";

export interface ReconcileQueueView {
  /** A reconcile is wanted (from `availableAt`). */
  pending: boolean;
  availableAt: number;
  /** A reconcile holds the resource now. */
  reconciling: boolean;
  consecutiveErrors: number;
  lastError: { code: string; message: string } | null;
}

export interface ResourceSummary {
  controller: string;
  key: string;
  uid: string;
  resourceVersion: number;
  generation: number;
  observedGeneration: number;
  deleting: boolean;
  queue: ReconcileQueueView | null;
}

interface QueueRow {
  pending: number | null;
  available_at: number | null;
  claim_version: number | null;
  consecutive_errors: number | null;
  last_error_code: string | null;
  last_error_message: string | null;
}

const SUMMARY_SELECT = `${
  resourceSelect(
    ", q.pending, q.available_at, q.claim_version, q.consecutive_errors, q.last_error_code, " +
      "q.last_error_message",
  )
} LEFT JOIN controller_queue q ON q.uid = r.uid`;

function queueView(row: QueueRow): ReconcileQueueView | null {
  if (row.pending === null) return null;
  return {
    pending: row.pending === 1,
    availableAt: row.available_at ?? 0,
    reconciling: row.claim_version !== null,
    consecutiveErrors: row.consecutive_errors ?? 0,
    lastError: row.last_error_code === null
      ? null
      : { code: row.last_error_code, message: row.last_error_message ?? "" },
  };
}

function toSummary(row: ResourceRow & QueueRow): ResourceSummary {
  const status = decodeValue(row.status_json) as { observedGeneration?: number } | undefined;
  return {
    controller: row.name,
    key: row.resource_key,
    uid: row.uid,
    resourceVersion: row.resource_version,
    generation: row.generation,
    observedGeneration: status?.observedGeneration ?? 0,
    deleting: row.deletion_requested_at !== null,
    queue: queueView(row),
  };
}

export interface ControllerSummary {
  name: string;
  sourceDigest: string;
  blockedReason: string | null;
  blockedDetail: string | null;
  resources: number;
  /** The live approved session binding (binding id and time only), or null. */
  sessionBinding: { bindingId: string; approvedAt: number } | null;
}

/** The controllers of a project with their live resource counts, by name. */
export function listControllers(store: StateStore, projectPath: string): ControllerSummary[] {
  return queryAll<{
    name: string;
    source_digest: string;
    blocked_reason: string | null;
    blocked_detail: string | null;
    resources: number;
    binding_id: string | null;
    approved_at: number | null;
  }>(
    store,
    "SELECT c.name, c.source_digest, c.blocked_reason, c.blocked_detail, (SELECT COUNT(*) FROM " +
      "controller_resources r WHERE r.controller_id = c.controller_id AND r.removed_at IS NULL) " +
      "AS resources, b.binding_id, b.approved_at FROM controllers c LEFT JOIN " +
      "controller_session_bindings b ON b.controller_id = c.controller_id AND b.revoked_at IS " +
      "NULL WHERE c.project_path = :projectPath ORDER BY c.name",
    { projectPath },
  ).map((r) => ({
    name: r.name,
    sourceDigest: r.source_digest,
    blockedReason: r.blocked_reason,
    blockedDetail: r.blocked_detail,
    resources: r.resources,
    sessionBinding: r.binding_id === null
      ? null
      : { bindingId: r.binding_id, approvedAt: r.approved_at ?? 0 },
  }));
}

/** Live resources of a project (optionally one controller), by controller and key. */
export function listResources(
  store: StateStore,
  opts: { projectPath: string; name?: string; limit?: number },
): ResourceSummary[] {
  return queryAll<ResourceRow & QueueRow>(
    store,
    `${SUMMARY_SELECT} WHERE c.project_path = :projectPath AND r.removed_at IS NULL ` +
      "AND (:name IS NULL OR c.name = :name) ORDER BY c.name, r.resource_key LIMIT :limit",
    { projectPath: opts.projectPath, name: opts.name ?? null, limit: opts.limit ?? 1000 },
  ).map(toSummary);
}

export interface ResourceDetail {
  resource: ControllerResource;
  queue: ReconcileQueueView | null;
  controller: ControllerSummary;
  effects: { effectId: string; kind: string; state: string }[];
  workflows: (ReturnType<typeof readChildRef> & { requestKey: string })[];
  /** The latest events, newest last. */
  events: { type: string; resourceVersion: number; payload: JsonValue; at: number }[];
}

/** One live resource with its queue state, effects, child workflows and latest events. */
export function readResourceDetail(
  store: StateStore,
  opts: { projectPath: string; name: string; key: string; events?: number },
): ResourceDetail | undefined {
  const controller = findController(store, opts.projectPath, opts.name);
  if (!controller) return undefined;
  const row = findLiveResource(store, controller.controller_id, opts.key);
  if (!row) return undefined;
  const queue = queryOne<QueueRow>(
    store,
    "SELECT pending, available_at, claim_version, consecutive_errors, last_error_code, " +
      "last_error_message FROM controller_queue WHERE uid = :uid",
    { uid: row.uid },
  );
  const summary = listControllers(store, opts.projectPath).find((c) => c.name === opts.name)!;
  const effects = queryAll<{ effect_id: string; effect_type: string; state: string }>(
    store,
    "SELECT effect_id, effect_type, state FROM effects WHERE resource_uid = :uid " +
      "ORDER BY created_at, effect_id",
    { uid: row.uid },
  ).map((e) => ({ effectId: e.effect_id, kind: e.effect_type, state: e.state }));
  const workflows = queryAll<{ request_id: string; request_key: string }>(
    store,
    "SELECT request_id, request_key FROM controller_workflow_requests WHERE uid = :uid " +
      "ORDER BY created_at, request_id",
    { uid: row.uid },
  ).map((w) => ({ ...readChildRef(store, w.request_id)!, requestKey: w.request_key }));
  const events = queryAll<
    { type: string; resource_version: number; payload_json: string; at: number }
  >(
    store,
    "SELECT type, resource_version, payload_json, at FROM (SELECT * FROM controller_events " +
      "WHERE uid = :uid ORDER BY event_id DESC LIMIT :limit) ORDER BY event_id",
    { uid: row.uid, limit: opts.events ?? 20 },
  ).map((e) => ({
    type: e.type,
    resourceVersion: e.resource_version,
    payload: decodeValue(e.payload_json) ?? null,
    at: e.at,
  }));
  return {
    resource: toResource(row),
    queue: queue ? queueView(queue) : null,
    controller: summary,
    effects,
    workflows,
    events,
  };
}

/** Whether any reconcile is wanted (now or later) or in flight: the host stays up for it. */
export function hasPendingReconciles(store: StateStore): boolean {
  return queryOne<{ n: number }>(
    store,
    "SELECT EXISTS (SELECT 1 FROM controller_queue q JOIN controller_resources r ON r.uid = " +
      "q.uid JOIN controllers c ON c.controller_id = r.controller_id WHERE (q.pending = 1 AND " +
      "c.blocked_reason IS NULL) OR q.claim_version IS NOT NULL) AS n",
  )!.n === 1;
}

/** Whether a controller's child run is queued, running or waiting (not blocked). */
export function hasChildRunsInFlight(store: StateStore): boolean {
  return queryOne<{ n: number }>(
    store,
    "SELECT EXISTS (SELECT 1 FROM controller_workflow_requests w JOIN runs r ON r.run_id = " +
      "w.run_id WHERE r.state IN ('queued', 'running', 'waiting') AND r.blocked_reason IS NULL) " +
      "AS n",
  )!.n === 1;
}

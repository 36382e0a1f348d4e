/**
 * Row access shared by the controller transitions: the pinned controller, the live resource,
 * its queue row, the resource view clients and workers see, and the controller event log. Every
 * function runs inside the caller's transaction.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { ControllerResource, ResourceStatus } from "../../protocol/controller-resource.ts";
import { type StateStore } from "../store.ts";
import { execute, queryOne } from "../statements.ts";
import { decodeValue, encodeValue } from "../values.ts";

export interface ControllerRow {
  controller_id: string;
  project_path: string;
  name: string;
  source_ref: string;
  source_json: string;
  source_digest: string;
  timeout_ms: number;
  blocked_reason: string | null;
  blocked_detail: string | null;
  revision: number;
  created_at: number;
  updated_at: number;
}

export interface ResourceRow {
  uid: string;
  controller_id: string;
  name: string;
  project_path: string;
  resource_key: string;
  resource_version: number;
  generation: number;
  spec_json: string;
  status_json: string;
  finalizers_json: string;
  deletion_requested_at: number | null;
  removed_at: number | null;
  created_at: number;
  updated_at: number;
}

/**
 * A `ResourceRow`'s select, with `extra` columns (", q.pending, ...") after its own: a query that
 * needs more columns passes them here rather than editing the SQL text.
 */
export function resourceSelect(extra = ""): string {
  return "SELECT r.uid, r.controller_id, c.name, c.project_path, r.resource_key, " +
    "r.resource_version, r.generation, r.spec_json, r.status_json, r.finalizers_json, " +
    `r.deletion_requested_at, r.removed_at, r.created_at, r.updated_at${extra} ` +
    "FROM controller_resources r JOIN controllers c ON c.controller_id = r.controller_id";
}

const RESOURCE_SELECT = resourceSelect();

export function findController(
  store: StateStore,
  projectPath: string,
  name: string,
): ControllerRow | undefined {
  return queryOne<ControllerRow>(
    store,
    "SELECT * FROM controllers WHERE project_path = :projectPath AND name = :name",
    { projectPath, name },
  );
}

/** The live (not removed) resource `key` of a controller, or undefined. */
export function findLiveResource(
  store: StateStore,
  controllerId: string,
  key: string,
): ResourceRow | undefined {
  return queryOne<ResourceRow>(
    store,
    `${RESOURCE_SELECT} WHERE r.controller_id = :controllerId AND r.resource_key = :key ` +
      "AND r.removed_at IS NULL",
    { controllerId, key },
  );
}

export function readResourceRow(store: StateStore, uid: string): ResourceRow | undefined {
  return queryOne<ResourceRow>(store, `${RESOURCE_SELECT} WHERE r.uid = :uid`, { uid });
}

/** The resource as controllers and clients see it. */
export function toResource(row: ResourceRow): ControllerResource {
  return {
    metadata: {
      uid: row.uid,
      controller: row.name,
      key: row.resource_key,
      resourceVersion: row.resource_version,
      generation: row.generation,
      ...(row.deletion_requested_at !== null
        ? { deletionTimestamp: new Date(row.deletion_requested_at).toISOString() }
        : {}),
      finalizers: (decodeValue(row.finalizers_json) ?? []) as string[],
    },
    spec: decodeValue(row.spec_json) ?? null,
    status: decodeValue(row.status_json) as unknown as ResourceStatus,
  };
}

/** Asks for a reconcile of `uid` from `at` on (sooner when one was already due earlier). */
export function enqueueReconcileInTx(store: StateStore, uid: string, now: number, at = now): void {
  execute(
    store,
    "UPDATE controller_queue SET available_at = CASE WHEN pending = 1 THEN " +
      "min(available_at, :at) ELSE :at END, pending = 1, version = version + 1, " +
      "updated_at = :now WHERE uid = :uid",
    { uid, at, now },
  );
}

/** Increases the resource version (every write does) and returns the new one. */
export function bumpResourceVersion(store: StateStore, uid: string, now: number): number {
  return queryOne<{ resource_version: number }>(
    store,
    "UPDATE controller_resources SET resource_version = resource_version + 1, updated_at = :now " +
      "WHERE uid = :uid RETURNING resource_version",
    { uid, now },
  )!.resource_version;
}

/** Appends one immutable event to the resource's history. */
export function appendControllerEvent(
  store: StateStore,
  uid: string,
  resourceVersion: number,
  type: string,
  payload: JsonValue,
  now: number,
): void {
  execute(
    store,
    "INSERT INTO controller_events (uid, resource_version, type, payload_json, at) " +
      "VALUES (:uid, :resourceVersion, :type, :payload, :now)",
    { uid, resourceVersion, type, payload: encodeValue("controller event", payload), now },
  );
}

/** The lease resource of a resource's reconcile claim. */
export function reconcileLease(uid: string): string {
  return `reconcile:${uid}`;
}

/** Whether a reconcile claim (live or expired and not yet recovered) holds the resource. */
export function reconcileClaimed(store: StateStore, uid: string): boolean {
  return queryOne<{ claimed: number }>(
    store,
    "SELECT claim_version IS NOT NULL AS claimed FROM controller_queue WHERE uid = :uid",
    { uid },
  )?.claimed === 1;
}

/**
 * Removes a resource whose deletion was requested once its finalizers are empty and no reconcile
 * holds it: it becomes a tombstone, its queue row goes, pending effects are cancelled. Returns
 * whether it was removed.
 */
export function removeIfDeletableInTx(store: StateStore, uid: string, now: number): boolean {
  const row = readResourceRow(store, uid);
  if (!row || row.removed_at !== null || row.deletion_requested_at === null) return false;
  if (((decodeValue(row.finalizers_json) ?? []) as string[]).length > 0) return false;
  if (reconcileClaimed(store, uid)) return false;
  const version = bumpResourceVersion(store, uid, now);
  execute(store, "UPDATE controller_resources SET removed_at = :now WHERE uid = :uid", {
    uid,
    now,
  });
  execute(store, "DELETE FROM controller_queue WHERE uid = :uid", { uid });
  execute(
    store,
    "UPDATE effects SET state = 'cancelled', updated_at = :now WHERE resource_uid = :uid " +
      "AND state = 'pending'",
    { uid, now },
  );
  appendControllerEvent(store, uid, version, "resource.removed", {}, now);
  return true;
}

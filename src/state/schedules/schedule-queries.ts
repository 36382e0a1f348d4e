/**
 * Read-only queries of schedules: a schedule's latest firings (`schedule show`) and the counts
 * `host status` reports.
 */
import type { ScheduleFiringView } from "../../protocol/schedule-operations.ts";
import { type StateStore } from "../store.ts";
import { queryAll, queryOne } from "../statements.ts";
import { HELD_AVAILABLE_AT } from "./schedule-records.ts";

/** The latest `limit` firings of a schedule, newest first. */
export function latestFirings(
  store: StateStore,
  scheduleId: string,
  limit: number,
): ScheduleFiringView[] {
  return queryAll<{
    slot_at: number;
    state: ScheduleFiringView["state"];
    run_id: string | null;
    reason: string | null;
    held: number | null;
  }>(
    store,
    "SELECT f.slot_at, f.state, f.run_id, f.reason, " +
      "(q.state = 'queued' AND q.available_at = :heldAt) AS held FROM schedule_firings f " +
      "LEFT JOIN run_queue q ON q.run_id = f.run_id WHERE f.schedule_id = :id " +
      "ORDER BY f.slot_at DESC LIMIT :limit",
    { id: scheduleId, limit, heldAt: HELD_AVAILABLE_AT },
  ).map((r) => ({
    slotAt: r.slot_at,
    state: r.state,
    ...(r.run_id !== null ? { runId: r.run_id } : {}),
    ...(r.reason !== null ? { reason: r.reason } : {}),
    ...(r.held === 1 ? { held: true } : {}),
  }));
}

export interface ScheduleCounts {
  enabled: number;
  paused: number;
  /** The earliest next slot of an enabled schedule. */
  nextFireAt: number | null;
}

export function scheduleCounts(store: StateStore): ScheduleCounts {
  const row = queryOne<{ enabled: number | null; paused: number | null; next: number | null }>(
    store,
    "SELECT SUM(paused = 0) AS enabled, SUM(paused = 1) AS paused, MIN(next_fire_at) AS next " +
      "FROM schedules",
  );
  return { enabled: row?.enabled ?? 0, paused: row?.paused ?? 0, nextFireAt: row?.next ?? null };
}

/**
 * Firing a schedule, in two durable steps so that a crash at any instant neither skips nor
 * doubles a slot:
 *
 * 1. `fireDueSchedule` (the host deadline timer, at the slot): one transaction records a
 *    `pending` firing per slot its catch-up policy fires and moves the schedule to its next slot.
 * 2. `skipBeforeResolve` records `skipped` at once a slot its overlap policy skips anyway.
 *    Otherwise the host resolves the workflow in a supervised child (it never loads workflow
 *    code), then settles the firing in one transaction: `startFiring` enqueues the run under the
 *    id derived from schedule and slot (`started`), or records `skipped` (overlap); `failFiring`
 *    records a failed run with the load error (`failed`) and pauses the schedule after 3 in a row.
 *
 * A host that dies between the steps finds the `pending` firing at start and settles it; a settle
 * that committed before the crash is found settled and left alone.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { FactError } from "../../protocol/run-facts.ts";
import type { RunEnvironment } from "../../protocol/run-environment.ts";
import { crashPoint } from "../../base/crash-point.ts";
import { CATCH_UP_LIMIT } from "../../base/schedule-timing.ts";
import { appendHistory, TERMINAL_RUN_STATES } from "../journal.ts";
import { type StateStore } from "../store.ts";
import { execute, queryAll, queryOne } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { decodeValue, encodeValue } from "../values.ts";
import { boundedError, setQueueState } from "../transitions/common.ts";
import { enqueueRunInTx, type EnqueueRunOptions } from "../transitions/run-enqueue.ts";
import { planFiring } from "./schedule-plan.ts";
import {
  HELD_AVAILABLE_AT,
  piLaunchOf,
  scheduleById,
  type ScheduleRow,
  scheduleRunId,
  timingOf,
} from "./schedule-records.ts";

/** Settled firings kept per schedule (newer ones, and any whose run is still active). */
export const KEPT_FIRINGS = 50;
/** Firings in a row whose workflow did not load before the schedule pauses itself. */
export const MAX_LOAD_FAILURES = 3;

const TERMINAL = `(${TERMINAL_RUN_STATES.map((s) => `'${s}'`).join(", ")})`;

/** The earliest next slot of an enabled schedule (one index probe), or null. */
export function nextScheduleDue(store: StateStore): number | null {
  return queryOne<{ at: number | null }>(
    store,
    "SELECT MIN(next_fire_at) AS at FROM schedules WHERE next_fire_at IS NOT NULL",
  )?.at ?? null;
}

/** Ids of schedules whose next slot has come, earliest first. */
export function dueScheduleIds(store: StateStore, now: number, limit: number): string[] {
  return queryAll<{ schedule_id: string }>(
    store,
    "SELECT schedule_id FROM schedules WHERE next_fire_at IS NOT NULL AND next_fire_at <= :now " +
      "ORDER BY next_fire_at LIMIT :limit",
    { now, limit },
  ).map((r) => r.schedule_id);
}

/**
 * Step 1 for one schedule: records its pending firings and its next slot in one transaction.
 * Returns the slots recorded (none when it was not due any more, or the policy fires none).
 */
export function fireDueSchedule(store: StateStore, scheduleId: string, now: number): number[] {
  return writeTransaction(store, () => {
    const row = scheduleById(store, scheduleId);
    if (!row || row.next_fire_at === null || row.next_fire_at > now) return [];
    const plan = planFiring(timingOf(row), row.catch_up, row.next_fire_at, now);
    for (const slot of plan.fire) {
      execute(
        store,
        "INSERT INTO schedule_firings (schedule_id, slot_at, state, created_at) " +
          "VALUES (:id, :slot, 'pending', :now) ON CONFLICT DO NOTHING",
        { id: scheduleId, slot, now },
      );
    }
    execute(
      store,
      "UPDATE schedules SET next_fire_at = :next, paused = :paused, paused_reason = :reason, " +
        "last_fired_at = COALESCE(:last, last_fired_at), missed_slots = missed_slots + :missed, " +
        "updated_at = :now WHERE schedule_id = :id",
      {
        id: scheduleId,
        next: plan.next,
        paused: plan.next === null ? 1 : 0,
        reason: plan.next === null ? "Its cron expression has no later slot" : null,
        last: plan.fire.at(-1) ?? null,
        missed: plan.missed,
        now,
      },
    );
    trimFirings(store, scheduleId);
    crashPoint("host.schedule.fired.beforeCommit");
    return plan.fire;
  });
}

/** Firings recorded but not settled yet (a host restart settles them), oldest first. */
export function pendingFirings(
  store: StateStore,
  limit = 1000,
): { scheduleId: string; slotAt: number }[] {
  return queryAll<{ schedule_id: string; slot_at: number }>(
    store,
    "SELECT schedule_id, slot_at FROM schedule_firings WHERE state = 'pending' " +
      "ORDER BY created_at, slot_at LIMIT :limit",
    { limit },
  ).map((r) => ({ scheduleId: r.schedule_id, slotAt: r.slot_at }));
}

/** What settling a pending firing needs: its schedule as it stands, or null when settled. */
export function pendingFiring(
  store: StateStore,
  scheduleId: string,
  slotAt: number,
): ScheduleRow | null {
  const firing = queryOne<{ state: string }>(
    store,
    "SELECT state FROM schedule_firings WHERE schedule_id = :id AND slot_at = :slot",
    { id: scheduleId, slot: slotAt },
  );
  if (firing?.state !== "pending") return null;
  return scheduleById(store, scheduleId) ?? null;
}

/** The schedule's runs that have not ended; `held` ones wait behind another (`queue`). */
export function activeScheduleRuns(
  store: StateStore,
  scheduleId: string,
): { runId: string; held: boolean; sourceParked: boolean }[] {
  return queryAll<{ run_id: string; held: number; source_parked: number }>(
    store,
    "SELECT f.run_id, q.available_at = :heldAt AS held, " +
      "COALESCE(r.blocked_reason = 'workflowSourceChanged', 0) AS source_parked " +
      "FROM schedule_firings f " +
      "JOIN runs r ON r.run_id = f.run_id JOIN run_queue q ON q.run_id = f.run_id " +
      `WHERE f.schedule_id = :id AND r.state NOT IN ${TERMINAL} ORDER BY f.slot_at`,
    { id: scheduleId, heldAt: HELD_AVAILABLE_AT },
  ).map((r) => ({ runId: r.run_id, held: r.held === 1, sourceParked: r.source_parked === 1 }));
}

/** The run fields of a resolved workflow (host/resolved-run.ts). */
export type FiringRunFields = Pick<
  EnqueueRunOptions,
  | "workflowName"
  | "workflowRef"
  | "title"
  | "projectPath"
  | "workflowSource"
  | "definitionDigest"
  | "definition"
  | "input"
  | "inputHash"
>;

export type StartOutcome =
  | { outcome: "started" | "held"; runId: string }
  | { outcome: "skipped"; reason: string }
  | { outcome: "settled" };

/**
 * Before step 2 resolves the workflow (a supervised child: seconds on a loaded machine), a firing
 * its overlap policy skips whatever the workflow is is skipped at once. Without this, the slots of
 * a short interval each waited for a resolution behind the slots before them, pending (shown
 * `starting`) ever longer, only to be skipped at the end. Null: resolve and start it.
 */
export function skipBeforeResolve(
  store: StateStore,
  scheduleId: string,
  slotAt: number,
): Extract<StartOutcome, { outcome: "skipped" | "settled" }> | null {
  return writeTransaction(store, () => {
    const row = pendingFiring(store, scheduleId, slotAt);
    if (!row) return { outcome: "settled" as const };
    const active = activeScheduleRuns(store, scheduleId);
    const reason = overlapSkipReason(store, row, slotAt, active, "beforeResolve");
    if (reason === null) return null;
    settle(store, scheduleId, slotAt, "skipped", null, reason, store.clock.now());
    return { outcome: "skipped" as const, reason };
  });
}

/**
 * Why the overlap policy skips a slot, or null when it starts (or holds) a run. A slot is judged
 * at the time it came (its firing was recorded), not when its turn to be settled came: the runs
 * ahead of it are the schedule's runs that were active then or still starting (their firing
 * settled into a run after this slot came). A firing still pending now is none of them: firings
 * settle one at a time in slot order, so an earlier one still pending is one whose settling failed
 * (retried later, or left to the next host start), and it must not hold back the slots after it.
 * - `skip`: a run is ahead, or one is active now. Before the resolution, not when every active
 *   run is parked `workflowSourceChanged`: the slot then loads its file, so a file that went
 *   fails the slot and counts toward the pause (one that loads is skipped once resolved);
 * - `queue`: 10 runs are held now, or 11 were ahead (one running and 10 waiting, counting those
 *   still starting: a backlog of slots waiting for their resolutions is bounded too);
 * - `cancel-previous`, before the resolution only: a later slot has come, and would cancel this
 *   slot's run at once (`superseded`). Once resolved, the slot starts: the firer has cancelled the
 *   previous runs by then, and skipping it would leave none.
 */
function overlapSkipReason(
  store: StateStore,
  row: ScheduleRow,
  slotAt: number,
  active: readonly { held: boolean; sourceParked: boolean }[],
  phase: "beforeResolve" | "resolved",
): "overlap" | "queueFull" | "superseded" | null {
  const params = { id: row.schedule_id, slot: slotAt };
  switch (row.overlap) {
    case "skip":
      if (phase === "beforeResolve" && active.length > 0 && active.every((r) => r.sourceParked)) {
        return null;
      }
      return active.length > 0 || runsAheadAtSlot(store, params) > 0 ? "overlap" : null;
    case "queue":
      return active.filter((r) => r.held).length >= CATCH_UP_LIMIT ||
          runsAheadAtSlot(store, params) > CATCH_UP_LIMIT
        ? "queueFull"
        : null;
    case "cancel-previous": {
      if (phase === "resolved") return null;
      const later = queryOne(
        store,
        "SELECT 1 AS later FROM schedule_firings WHERE schedule_id = :id AND slot_at > :slot " +
          "LIMIT 1",
        params,
      );
      return later ? "superseded" : null;
    }
  }
}

/** The schedule's runs of earlier slots that were active or still starting when this slot came. */
function runsAheadAtSlot(store: StateStore, params: { id: string; slot: number }): number {
  return queryOne<{ n: number }>(
    store,
    "SELECT COUNT(*) AS n FROM schedule_firings me JOIN schedule_firings e " +
      "ON e.schedule_id = me.schedule_id AND e.slot_at < me.slot_at AND e.state = 'started' " +
      "JOIN runs r ON r.run_id = e.run_id WHERE me.schedule_id = :id AND me.slot_at = :slot AND " +
      `(e.settled_at > me.created_at OR r.state NOT IN ${TERMINAL} OR ` +
      "COALESCE(r.finished_at, r.state_changed_at) > me.created_at)",
    params,
  )!.n;
}

/**
 * Step 2, the workflow loaded: by the overlap policy, judged again in this transaction (runs may
 * have started or ended during the resolution), enqueue the slot's run (held behind the schedule's
 * active run for `queue`) or skip the slot (`overlapSkipReason`). `cancel-previous` cancelled the
 * active runs before this call; a run that is still active then does not stop the new one.
 */
export function startFiring(
  store: StateStore,
  opts: { scheduleId: string; slotAt: number; run: FiringRunFields },
): StartOutcome {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const row = pendingFiring(store, opts.scheduleId, opts.slotAt);
    if (!row) return { outcome: "settled" as const };
    const active = activeScheduleRuns(store, row.schedule_id);
    const reason = overlapSkipReason(store, row, opts.slotAt, active, "resolved");
    if (reason !== null) {
      settle(store, row.schedule_id, opts.slotAt, "skipped", null, reason, now);
      return { outcome: "skipped" as const, reason };
    }
    const held = active.length > 0 && row.overlap === "queue";
    const runId = scheduleRunId(row.schedule_id, opts.slotAt);
    enqueueRunInTx(store, {
      ...opts.run,
      runId,
      binding: { executionMode: "headless", pi: piLaunchOf(row) },
      environment: (decodeValue(row.env_json) ?? {}) as RunEnvironment,
      credentialNames: JSON.parse(row.credential_names_json) as string[],
      runSecretNames: JSON.parse(row.run_secret_names_json) as string[],
      ...(held ? { availableAt: HELD_AVAILABLE_AT } : {}),
    }, now);
    settle(store, row.schedule_id, opts.slotAt, "started", runId, null, now);
    execute(
      store,
      "UPDATE schedules SET load_failures = 0, workflow_name = :name, workflow_ref = :ref, " +
        "workflow_source_json = :source, definition_digest = :digest, input_hash = :inputHash " +
        "WHERE schedule_id = :id",
      {
        id: row.schedule_id,
        name: opts.run.workflowName,
        ref: opts.run.workflowRef,
        source: encodeValue("workflowSource", opts.run.workflowSource),
        digest: opts.run.definitionDigest,
        inputHash: opts.run.inputHash,
      },
    );
    crashPoint("host.schedule.started.beforeCommit");
    return { outcome: held ? "held" as const : "started" as const, runId };
  });
}

/**
 * Step 2, the workflow did not load: a failed run under the slot's id shows the load error where
 * runs are looked at, and the third such firing in a row pauses the schedule with the reason.
 */
export function failFiring(
  store: StateStore,
  opts: { scheduleId: string; slotAt: number; error: FactError },
): { runId: string; paused: boolean } | null {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const row = pendingFiring(store, opts.scheduleId, opts.slotAt);
    if (!row) return null;
    const runId = scheduleRunId(row.schedule_id, opts.slotAt);
    const error = boundedError(opts.error);
    const input = (decodeValue(row.input_json) ?? null) as JsonValue;
    enqueueRunInTx(store, {
      runId,
      workflowName: row.workflow_name,
      workflowRef: row.workflow_ref,
      projectPath: row.project_path,
      workflowSource: (decodeValue(row.workflow_source_json) ?? null) as JsonValue,
      definitionDigest: row.definition_digest,
      input,
      inputHash: row.input_hash,
      binding: { executionMode: "headless", pi: piLaunchOf(row) },
    }, now);
    setQueueState(store, runId, "failed", now);
    execute(
      store,
      "UPDATE runs SET state = 'failed', finished_at = :now, state_changed_at = :now, " +
        "error_code = :code, error_message = :message WHERE run_id = :runId",
      { runId, now, code: error.code, message: error.message },
    );
    appendHistory(store, runId, 2, now, {
      type: "run.failed",
      payload: { code: error.code },
      summary: { state: "failed", code: error.code },
    });
    settle(store, row.schedule_id, opts.slotAt, "failed", runId, error.message, now);
    const failures = row.load_failures + 1;
    const paused = failures >= MAX_LOAD_FAILURES && row.paused === 0;
    execute(
      store,
      "UPDATE schedules SET load_failures = :failures, paused = CASE WHEN :pause THEN 1 " +
        "ELSE paused END, paused_reason = CASE WHEN :pause THEN :reason ELSE paused_reason END, " +
        "next_fire_at = CASE WHEN :pause THEN NULL ELSE next_fire_at END, updated_at = :now " +
        "WHERE schedule_id = :id",
      {
        id: row.schedule_id,
        failures,
        pause: paused ? 1 : 0,
        reason: `Its workflow failed to load ${failures} times in a row: ${error.message}`
          .slice(0, 1000),
        now,
      },
    );
    return { runId, paused };
  });
}

function settle(
  store: StateStore,
  scheduleId: string,
  slotAt: number,
  state: "started" | "skipped" | "failed",
  runId: string | null,
  reason: string | null,
  now: number,
): void {
  execute(
    store,
    "UPDATE schedule_firings SET state = :state, run_id = :runId, reason = :reason, " +
      "settled_at = :now WHERE schedule_id = :id AND slot_at = :slot",
    { id: scheduleId, slot: slotAt, state, runId, reason: reason?.slice(0, 1000) ?? null, now },
  );
}

/** Keeps the newest `KEPT_FIRINGS` settled firings of a schedule, and any with an active run. */
function trimFirings(store: StateStore, scheduleId: string): void {
  execute(
    store,
    "DELETE FROM schedule_firings WHERE schedule_id = :id AND state <> 'pending' AND " +
      "slot_at < (SELECT slot_at FROM schedule_firings WHERE schedule_id = :id " +
      "ORDER BY slot_at DESC LIMIT 1 OFFSET :keep) AND NOT EXISTS (SELECT 1 FROM runs r " +
      `WHERE r.run_id = schedule_firings.run_id AND r.state NOT IN ${TERMINAL})`,
    { id: scheduleId, keep: KEPT_FIRINGS - 1 },
  );
}

/**
 * Consistency rules of schedules and their firings, checked by `checkInvariants` (tests,
 * `pi-workflows doctor`) next to the run rules. Each query returns the rows that break its rule.
 */
import { HELD_AVAILABLE_AT, scheduleRunId } from "./schedule-records.ts";
import { MAX_LOAD_FAILURES } from "./schedule-firing.ts";

export interface ScheduleCheck {
  code: string;
  sql: string;
  /** For a rule SQL cannot say whole: whether a row the query found breaks it. */
  breaks?: (row: Record<string, unknown>) => boolean;
  detail: (row: Record<string, unknown>) => string;
}

const TERMINAL = "('completed', 'failed', 'timed_out', 'cancelled')";

export const SCHEDULE_CHECKS: ScheduleCheck[] = [
  {
    code: "scheduleFiringRunId",
    // A firing's run id is derived from its schedule and slot: a retry finds the same run. The
    // derivation is a digest, computed here rather than in SQL.
    sql: "SELECT s.name, f.schedule_id, f.slot_at, f.run_id FROM schedule_firings f " +
      "JOIN schedules s ON s.schedule_id = f.schedule_id WHERE f.run_id IS NOT NULL",
    // A firing started before the digest (0.13.0-alpha.0 until f07a8c6) keeps the run id it
    // started: `run-<schedule id>-<slot ms>`.
    breaks: (r) =>
      r.run_id !== scheduleRunId(String(r.schedule_id), Number(r.slot_at)) &&
      r.run_id !== `run-${r.schedule_id}-${r.slot_at}`,
    detail: (r) => `schedule ${r.name}: the firing of slot ${r.slot_at} names another run id`,
  },
  {
    code: "scheduleBehindFirings",
    // The next slot moves past a slot in the transaction that records its firing.
    sql: "SELECT s.name, MAX(f.slot_at) AS slot FROM schedules s JOIN schedule_firings f " +
      "ON f.schedule_id = s.schedule_id WHERE s.next_fire_at IS NOT NULL " +
      "GROUP BY s.schedule_id HAVING MAX(f.slot_at) >= s.next_fire_at",
    detail: (r) => `schedule ${r.name}: its next slot is not after its fired slot ${r.slot}`,
  },
  {
    code: "scheduleStartedWithoutRun",
    // A started or failed firing commits with its run.
    sql: "SELECT s.name, f.slot_at, f.run_id FROM schedule_firings f JOIN schedules s " +
      "ON s.schedule_id = f.schedule_id LEFT JOIN runs r ON r.run_id = f.run_id " +
      "WHERE f.run_id IS NOT NULL AND r.run_id IS NULL",
    detail: (r) => `schedule ${r.name}: the firing of slot ${r.slot_at} names no run`,
  },
  {
    code: "scheduleHeldRunStranded",
    // A held run waits for an active run of its schedule that is not held itself.
    sql: "SELECT s.name, f.run_id FROM schedule_firings f JOIN schedules s " +
      "ON s.schedule_id = f.schedule_id JOIN run_queue q ON q.run_id = f.run_id " +
      `WHERE q.state = 'queued' AND q.available_at = ${HELD_AVAILABLE_AT} AND NOT EXISTS (` +
      "SELECT 1 FROM schedule_firings a JOIN runs ar ON ar.run_id = a.run_id " +
      "JOIN run_queue aq ON aq.run_id = a.run_id WHERE a.schedule_id = f.schedule_id AND " +
      `ar.state NOT IN ${TERMINAL} AND aq.available_at <> ${HELD_AVAILABLE_AT})`,
    detail: (r) => `schedule ${r.name}: a held run waits with no active run before it`,
  },
  {
    code: "scheduleFailuresUnpaused",
    sql: `SELECT name, load_failures FROM schedules WHERE load_failures >= ${MAX_LOAD_FAILURES} ` +
      "AND paused = 0",
    detail: (r) =>
      `schedule ${r.name}: ${r.load_failures} load failures in a row and still enabled`,
  },
];

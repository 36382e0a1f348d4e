/**
 * The invariant checker: every violated consistency rule of the durable state, found with
 * read-only queries. Tests run it after every step; `pi-workflows doctor` runs it on the user's
 * database. An empty list means the projections agree with each other.
 */
import { eventKeyRangeSql, newestEventSql, runRevisionSql } from "./journal.ts";
import { type StateStore } from "./store.ts";
import { queryAll } from "./statements.ts";
import { CONTROLLER_CHECKS } from "./controllers/controller-invariants.ts";
import { FORK_CHECKS } from "./fork-invariants.ts";
import { SCHEDULE_CHECKS } from "./schedules/schedule-invariants.ts";
import { danglingReferenceSql, MARKED_RUNS_SQL } from "./dangling-references.ts";

export interface Violation {
  code: string;
  runId?: string;
  detail: string;
}

const ALLOWED_PAIRS = [
  "queued/queued",
  "running/starting",
  "running/running",
  "running/parked",
  "waiting/parked",
  "completed/done",
  "failed/failed",
  "timed_out/failed",
  "cancelled/cancelled",
];
const TERMINAL = "('completed', 'failed', 'timed_out', 'cancelled')";

interface Check {
  code: string;
  sql: string;
  /** For a rule SQL cannot say whole: whether a row the query found breaks it (default: all do). */
  breaks?: (row: Record<string, unknown>) => boolean;
  detail: (row: Record<string, unknown>) => string;
}

const CHECKS: Check[] = [
  {
    code: "runQueueMismatch",
    sql: "SELECT r.run_id, r.state, q.state AS queue FROM runs r LEFT JOIN run_queue q " +
      "ON q.run_id = r.run_id WHERE COALESCE(r.state || '/' || q.state, '') NOT IN (" +
      ALLOWED_PAIRS.map((p) => `'${p}'`).join(", ") + ")",
    detail: (r) => `run state ${r.state} with queue state ${r.queue ?? "(missing)"}`,
  },
  {
    code: "missingBinding",
    sql: "SELECT r.run_id FROM runs r LEFT JOIN run_bindings b ON b.run_id = r.run_id " +
      "WHERE b.run_id IS NULL",
    detail: () => "run has no run_bindings row",
  },
  {
    code: "claimOutsideActiveRun",
    sql:
      "SELECT l.run_id, r.state, q.state AS queue FROM leases l JOIN runs r ON r.run_id = l.run_id " +
      "JOIN run_queue q ON q.run_id = r.run_id WHERE l.token_hash IS NOT NULL " +
      "AND NOT (r.state = 'running' AND q.state IN ('starting', 'running'))",
    detail: (r) => `a claim is held while the run is ${r.state}/${r.queue}`,
  },
  {
    code: "activeRunWithoutClaim",
    sql: "SELECT r.run_id, q.state AS queue FROM runs r JOIN run_queue q ON q.run_id = r.run_id " +
      "LEFT JOIN leases l ON l.resource = 'run:' || r.run_id WHERE r.state = 'running' " +
      "AND q.state IN ('starting', 'running') AND (l.token_hash IS NULL OR l.owner_type <> 'host')",
    detail: (r) => `run is running/${r.queue} without a host claim`,
  },
  {
    code: "workerEpochMismatch",
    // The epoch may already have ended (crash before the host parks the run); it must exist.
    sql: "SELECT r.run_id, q.state AS queue FROM runs r JOIN run_queue q ON q.run_id = r.run_id " +
      "JOIN leases l ON l.resource = 'run:' || r.run_id WHERE r.state = 'running' AND " +
      "q.state IN ('starting', 'running') AND NOT EXISTS (SELECT 1 FROM run_workers w WHERE " +
      "w.run_id = r.run_id AND w.generation = l.generation AND (q.state = 'starting' OR " +
      "w.ready_at IS NOT NULL))",
    detail: (r) => `run is running/${r.queue} but no worker epoch of its generation matches`,
  },
  {
    code: "multipleActiveWorkers",
    sql: "SELECT run_id, COUNT(*) AS n FROM run_workers WHERE status IN ('starting', 'live') " +
      "GROUP BY run_id HAVING COUNT(*) > 1",
    detail: (r) => `${r.n} active worker epochs`,
  },
  {
    code: "generationRegressed",
    sql: "SELECT w.run_id, MAX(w.generation) AS g, l.generation AS lg FROM run_workers w " +
      "LEFT JOIN leases l ON l.resource = 'run:' || w.run_id GROUP BY w.run_id " +
      "HAVING l.generation IS NULL OR MAX(w.generation) > l.generation",
    detail: (r) => `worker generation ${r.g} exceeds lease generation ${r.lg ?? "(none)"}`,
  },
  {
    code: "revisionMismatch",
    // The revision is the newest event's seq, so revisions 1..it must each have their event
    // (run.queued at least): a gap or an empty history means a lost or misplaced event.
    sql: "SELECT r.run_id, COUNT(e.seq) AS n, COALESCE(MAX(e.seq), 0) AS m " +
      `FROM runs r LEFT JOIN events e ON ${eventKeyRangeSql("e.event_key", "r.run_no")} ` +
      "GROUP BY r.run_id HAVING COUNT(e.seq) = 0 OR COUNT(e.seq) <> MAX(e.seq)",
    detail: (r) => `revision ${r.m} but ${r.n} events`,
  },
  {
    code: "eventOrder",
    sql: "SELECT run_id, seq, run_revision FROM events WHERE run_revision <> seq",
    detail: (r) => `event ${r.seq} carries revision ${r.run_revision}`,
  },
  {
    code: "eventKeyMismatch",
    sql: "SELECT e.run_id, e.seq FROM events e LEFT JOIN runs r ON r.run_id = e.run_id " +
      "WHERE r.run_no IS NULL OR e.event_key <> r.run_no * 4294967296 + e.seq",
    detail: (r) => `event ${r.seq} is not keyed under its run's number`,
  },
  {
    code: "viewerDeltaMismatch",
    // Every revision has a delta (worker-epoch deltas reuse a revision, hence DISTINCT), except
    // those retention trimmed off the front of the feed: a run's deltas are its newest revisions
    // without a gap, up to its revision, and a run without any last changed before the feed's
    // oldest delta.
    sql: "SELECT x.run_id, x.revision, d.n, d.m FROM (SELECT r.run_id, " +
      `COALESCE(${runRevisionSql()}, 0) AS revision, ${newestEventSql("at")} AS changed ` +
      "FROM runs r) x LEFT JOIN (SELECT run_id, COUNT(DISTINCT run_revision) AS n, " +
      "MIN(run_revision) AS lo, MAX(run_revision) AS m FROM viewer_deltas GROUP BY run_id) d " +
      "ON d.run_id = x.run_id WHERE CASE WHEN d.n IS NULL THEN x.revision > 0 AND " +
      "x.changed > COALESCE((SELECT at FROM viewer_deltas ORDER BY revision LIMIT 1), 0) " +
      "ELSE d.m <> x.revision OR d.n <> d.m - d.lo + 1 END",
    detail: (r) => `revision ${r.revision} but viewer deltas cover ${r.n ?? 0} up to ${r.m ?? 0}`,
  },
  {
    code: "terminalEventOnLiveRun",
    sql: "SELECT e.run_id, e.type, r.state FROM events e JOIN runs r ON r.run_id = e.run_id " +
      "WHERE e.type IN ('run.completed', 'run.failed', 'run.timed_out', 'run.cancelled') " +
      "AND e.type <> 'run.' || r.state",
    detail: (r) => `event ${r.type} while the run is ${r.state}`,
  },
  {
    code: "terminalRunIncomplete",
    sql: "SELECT r.run_id, r.state FROM runs r WHERE r.state IN " + TERMINAL + " AND (" +
      "r.finished_at IS NULL OR (SELECT type FROM events e WHERE " +
      `${eventKeyRangeSql("e.event_key", "r.run_no")} ORDER BY e.event_key DESC LIMIT 1) IS NOT ` +
      "'run.' || r.state)",
    detail: (r) => `terminal ${r.state} run lacks its finish time or final event`,
  },
  {
    code: "openAttemptOnInactiveRun",
    sql: "SELECT a.run_id, a.attempt_id, a.state, r.state AS run_state, q.state AS queue " +
      "FROM node_attempts a JOIN runs r ON r.run_id = a.run_id JOIN run_queue q ON " +
      "q.run_id = a.run_id WHERE (a.state = 'running' AND NOT (r.state = 'running' AND " +
      "q.state = 'running')) OR (a.state = 'waiting' AND r.state <> 'waiting')",
    detail: (r) =>
      `attempt ${r.attempt_id} is ${r.state} while the run is ${r.run_state}/${r.queue}`,
  },
  {
    code: "waitingWithoutRequest",
    sql: "SELECT r.run_id FROM runs r WHERE r.state = 'waiting' AND NOT EXISTS (SELECT 1 FROM " +
      "node_attempts a WHERE a.run_id = r.run_id AND a.state = 'waiting' AND (EXISTS (SELECT 1 " +
      "FROM human_decisions d WHERE d.attempt_id = a.attempt_id AND d.state = 'pending') " +
      "OR EXISTS (SELECT 1 FROM interactive_requests i WHERE i.attempt_id = a.attempt_id)))",
    detail: () => "waiting run has no waiting attempt with a decision or interactive request",
  },
  {
    // An answer resumes the run in place: how a decision closed and how its attempt ended agree.
    code: "decisionAttemptMismatch",
    sql: "SELECT d.run_id, d.decision_id, d.state, a.state AS attempt, h.resolution FROM " +
      "human_decisions d JOIN node_attempts a ON a.attempt_id = d.attempt_id LEFT JOIN " +
      "human_decision_resolutions h ON h.decision_id = d.decision_id WHERE NOT (" +
      "(d.state = 'pending' AND a.state = 'waiting' AND h.resolution IS NULL) OR " +
      "(d.state = 'resolved' AND a.state = 'ok' AND h.resolution IN ('answered', 'timeoutDefault')) OR " +
      "(d.state = 'timedOut' AND a.state = 'timed_out' AND h.resolution = 'timedOut') OR " +
      "(d.state = 'cancelled' AND a.state = 'cancelled' AND h.resolution = 'cancelled'))",
    detail: (r) =>
      `decision ${r.decision_id} is ${r.state} (${r.resolution ?? "no resolution"}) but its ` +
      `attempt is ${r.attempt}`,
  },
  {
    code: "pendingInteractionOnTerminalRun",
    sql:
      "SELECT run_id FROM human_decisions WHERE state = 'pending' AND run_id IN (SELECT run_id " +
      "FROM runs WHERE state IN " + TERMINAL + ") UNION ALL SELECT run_id FROM " +
      "interactive_requests WHERE status = 'pending' AND run_id IN (SELECT run_id FROM runs " +
      "WHERE state IN " + TERMINAL + ")",
    detail: () => "a pending decision or interactive request belongs to a terminal run",
  },
  {
    // No completion turn may start before the completed state is durable.
    code: "presentationBeforeCompletion",
    sql: "SELECT t.run_id, r.state FROM turn_intents t JOIN runs r ON r.run_id = t.run_id " +
      "WHERE t.cause = 'presentation' AND t.eligible_at IS NOT NULL AND " +
      "t.source_attempt_id IS NULL AND r.state <> 'completed'",
    detail: (r) => `a completion presentation is eligible while the run is ${r.state}`,
  },
  {
    // A checkpoint's presentation (its waiting attempt named) is due only once the wait is.
    code: "presentationBeforeWait",
    sql: "SELECT t.run_id FROM turn_intents t WHERE t.cause = 'presentation' AND " +
      "t.eligible_at IS NOT NULL AND t.source_attempt_id IS NOT NULL AND NOT EXISTS (SELECT 1 " +
      "FROM human_decisions d WHERE d.attempt_id = t.source_attempt_id AND " +
      "d.kind = 'checkpoint' AND d.created_at <= t.eligible_at)",
    detail: () => "a checkpoint's presentation is eligible before its run waits there",
  },
  {
    code: "turnIntentUnowed",
    sql: "SELECT t.run_id FROM turn_intents t LEFT JOIN run_bindings b ON b.run_id = t.run_id " +
      "WHERE b.execution_mode IS NOT 'interactive' OR b.origin_session_id IS NOT " +
      "t.target_session_id",
    detail: () => "a turn intent is not addressed to its run's origin session",
  },
  {
    code: "notificationMisaddressed",
    sql: "SELECT n.run_id FROM notifications n JOIN run_bindings b ON b.run_id = n.run_id " +
      "WHERE n.target_session_id IS NOT (CASE b.execution_mode WHEN 'interactive' THEN " +
      "b.origin_session_id END)",
    detail: () => "a notification is not addressed to its run's origin session",
  },
  {
    code: "pendingInteractionNotWaiting",
    // A pending request waits on its attempt: the attempt is `waiting` and so is the run.
    sql:
      "SELECT i.run_id, i.request_id, a.state, r.state AS run_state FROM interactive_requests i " +
      "JOIN node_attempts a ON a.attempt_id = i.attempt_id JOIN runs r ON r.run_id = i.run_id " +
      "WHERE i.status = 'pending' AND (a.state <> 'waiting' OR r.state <> 'waiting')",
    detail: (r) =>
      `pending request ${r.request_id} but its attempt is ${r.state} and its run ${r.run_state}`,
  },
  {
    code: "closedInteractionStillWaiting",
    sql:
      "SELECT i.run_id, i.request_id, i.status FROM interactive_requests i JOIN node_attempts a " +
      "ON a.attempt_id = i.attempt_id WHERE i.status <> 'pending' AND a.state = 'waiting'",
    detail: (r) => `request ${r.request_id} is ${r.status} but its attempt still waits`,
  },
  {
    code: "settledInteractionMismatch",
    // A model step is settled exactly by its one accepted submission, and its attempt is ok.
    sql: "SELECT i.run_id, i.request_id FROM interactive_requests i LEFT JOIN " +
      "interactive_submissions s ON s.submission_id = i.accepted_submission_id LEFT JOIN " +
      "node_attempts a ON a.attempt_id = i.attempt_id WHERE i.kind IN ('agent', " +
      "'assistantMessage') AND ((i.status = 'settled' AND (s.outcome IS NOT 'accepted' OR " +
      "s.request_id IS NOT i.request_id OR a.state <> 'ok')) OR (i.status <> 'settled' AND " +
      "i.accepted_submission_id IS NOT NULL) OR (SELECT COUNT(*) FROM interactive_submissions x " +
      "WHERE x.request_id = i.request_id AND x.outcome = 'accepted') > " +
      "(CASE i.status WHEN 'settled' THEN 1 ELSE 0 END))",
    detail: (r) => `request ${r.request_id} and its accepted submission disagree`,
  },
  {
    code: "validatingOnClosedInteraction",
    sql: "SELECT i.run_id, s.submission_id FROM interactive_submissions s JOIN " +
      "interactive_requests i ON i.request_id = s.request_id WHERE s.outcome = 'validating' " +
      "AND i.status <> 'pending'",
    detail: (r) => `submission ${r.submission_id} is validating for a closed request`,
  },
  {
    code: "interactionSessionMismatch",
    sql: "SELECT i.run_id, i.request_id FROM interactive_requests i JOIN run_bindings b " +
      "ON b.run_id = i.run_id WHERE i.kind IN ('agent', 'assistantMessage') AND " +
      "(b.execution_mode <> 'interactive' OR i.target_session_id IS NOT b.origin_session_id)",
    detail: (r) => `request ${r.request_id} targets another session than its run's origin`,
  },
  {
    code: "sessionReservationExceeded",
    sql: "SELECT MIN(r.run_id) AS run_id, COUNT(*) AS n FROM run_bindings b JOIN runs r " +
      "ON r.run_id = b.run_id WHERE b.execution_mode = 'interactive' AND r.state IN " +
      "('queued', 'running', 'waiting') GROUP BY b.origin_session_id HAVING COUNT(*) > 1",
    detail: (r) => `${r.n} active interactive runs share one origin session`,
  },
  {
    code: "unsettledEffectOnTerminalRun",
    sql:
      "SELECT run_id, effect_id FROM effects WHERE state IN ('pending', 'applying') AND run_id " +
      "IN (SELECT run_id FROM runs WHERE state IN " + TERMINAL + ")",
    detail: (r) => `effect ${r.effect_id} is still pending or applying`,
  },
  {
    code: "pausedOrBlockedButActive",
    sql: "SELECT r.run_id, q.state AS queue FROM runs r JOIN run_queue q ON q.run_id = r.run_id " +
      "WHERE (r.paused = 1 OR r.blocked_reason IS NOT NULL) AND q.state IN ('starting', 'running')",
    detail: (r) => `paused or blocked run has queue state ${r.queue}`,
  },
  {
    code: "hostClaimInconsistent",
    sql: "SELECT NULL AS run_id, COUNT(*) AS n FROM host_claim HAVING COUNT(*) > 1",
    detail: (r) => `${r.n} host claim rows`,
  },
  {
    // SQLite enforces the foreign keys on every write but a prune's (pass-transaction.ts turns
    // the checks off for its deleting transactions): whatever wrote it, none may dangle but a
    // marked run's (dangling-references.ts).
    code: "danglingReference",
    sql: danglingReferenceSql(),
    detail: (r) => `a row of ${r.child} (rowid ${r.row ?? "-"}) names a missing ${r.parent} row`,
  },
  ...FORK_CHECKS,
  ...CONTROLLER_CHECKS,
  ...SCHEDULE_CHECKS,
];

/** Every violated invariant (empty when the state is consistent). */
export function checkInvariants(store: StateStore): Violation[] {
  const violations: Violation[] = [];
  // One read transaction: every check sees the same WAL snapshot, so a live host committing
  // between two checks cannot make consistent state look inconsistent.
  const own = !store.db.isTransaction;
  if (own) store.db.exec("BEGIN DEFERRED");
  try {
    // A run being pruned is gone (its row first); the rows it has left are consistent as they
    // are: they go in later transactions, children first (retention/run-marks.ts).
    const marked = new Set(
      queryAll<{ run_id: string }>(store, MARKED_RUNS_SQL).map((r) => r.run_id),
    );
    for (const check of CHECKS) {
      for (const row of queryAll<Record<string, unknown>>(store, check.sql)) {
        const runId = typeof row.run_id === "string" ? row.run_id : undefined;
        if (runId !== undefined && marked.has(runId)) continue;
        if (check.breaks && !check.breaks(row)) continue;
        violations.push({
          code: check.code,
          ...(runId ? { runId } : {}),
          detail: check.detail(row),
        });
      }
    }
  } finally {
    if (own) store.db.exec("COMMIT");
  }
  return violations;
}

/** The codes `checkInvariants` can return (for docs and doctor output). */
export const INVARIANT_CODES: readonly string[] = CHECKS.map((c) => c.code);

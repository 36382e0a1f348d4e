/**
 * Errors raised by the state store. Messages are one line, name what failed and never include a
 * token, token hash, payload or session id.
 */
import { dirname } from "node:path";

/** The database cannot be opened: bad permissions, corrupt file, not a database, wrong schema. */
export class StateOpenError extends Error {
  readonly file: string;
  /** What is wrong, without the path or a command (`host status` names it and points at doctor). */
  readonly summary: string;
  constructor(file: string, detail: string, summary: string = detail, verb = "open") {
    super(`Cannot ${verb} workflow state ${file}: ${detail}`);
    this.name = "StateOpenError";
    this.file = file;
    this.summary = summary;
  }
}

/** There is no database yet, or it has no tables: the host creates it; nothing is wrong. */
export class StateMissingError extends StateOpenError {
  constructor(file: string, detail: string) {
    super(file, detail);
    this.name = "StateMissingError";
  }
}

/** The file is a database of another identity, version or DDL digest; nothing was changed. */
export class StateSchemaMismatchError extends StateOpenError {
  constructor(file: string, found: string) {
    super(file, `${found}; ${resetInstruction(file)}`, found);
    this.name = "StateSchemaMismatchError";
  }
}

/**
 * The file fails SQLite's quick check (a damaged page), or a read reached a damaged page
 * (`verb` "read": a viewer, which opens without the whole-file check); nothing was changed.
 */
export class StateDamagedError extends StateOpenError {
  constructor(file: string, problem: string, verb = "open") {
    super(
      file,
      `the database is damaged (SQLite: ${problem}); ${resetInstruction(file)}`,
      "the database is damaged (back it up and reset it; `sqlite3 .recover` salvages what is " +
        "still readable)",
      verb,
    );
    this.name = "StateDamagedError";
  }
}

function resetInstruction(file: string): string {
  return "the file was left untouched. Stop the host, then back it up and reset with " +
    `\`mv ${file} ${file}.bak\` (also move any ${file}-wal and ${file}-shm) and start again; ` +
    salvageHint(`${file}.bak`);
}

/** How to keep what is still readable of a damaged database, to look into by hand. */
export function salvageHint(backup: string): string {
  return `to keep what is still readable, \`sqlite3 ${backup} .recover | sqlite3 ${backup}.recovered\``;
}

export const CLAIM_LOST_REASONS = [
  "missingAuthority",
  "expired",
  "ownerChanged",
  "tokenChanged",
  "generationChanged",
] as const;
export type ClaimLostReason = (typeof CLAIM_LOST_REASONS)[number];

/** A protected write or claim operation was refused; nothing changed. */
export class ClaimLostError extends Error {
  readonly reason: ClaimLostReason;
  readonly runId: string | null;
  readonly generation: number;
  constructor(runId: string | null, generation: number, reason: ClaimLostReason) {
    super(`Claim lost for run ${runId ?? "(none)"} generation ${generation}: ${reason}`);
    this.name = "ClaimLostError";
    this.reason = reason;
    this.runId = runId;
    this.generation = generation;
  }
}

/**
 * A lifecycle transition was attempted from a state that does not allow it; nothing changed.
 * `currentState` says the run's state in words (`it has ended (cancelled)`, `it is paused`:
 * transitions/common.ts's `describeState`), never the tables' compound names: the message goes
 * to the person or model that asked.
 */
export class TransitionError extends Error {
  readonly runId: string;
  readonly transition: string;
  readonly currentState: string;
  constructor(runId: string, transition: string, currentState: string, detail?: string) {
    super(`Cannot ${transition} run ${runId}: ${currentState}` + (detail ? `; ${detail}` : ""));
    this.name = "TransitionError";
    this.runId = runId;
    this.transition = transition;
    this.currentState = currentState;
  }
}

/** An ended run's state as refusals say it: `it has ended (timed out)`. */
export function endedState(state: string): string {
  return `it has ended (${state.replace("_", " ")})`;
}

/** The caller's expected revision is not the run's current revision; nothing changed. */
export class RevisionConflictError extends Error {
  readonly runId: string;
  readonly expected: number;
  readonly actual: number;
  constructor(runId: string, expected: number, actual: number) {
    super(`Revision conflict for run ${runId}: expected ${expected}, found ${actual}`);
    this.name = "RevisionConflictError";
    this.runId = runId;
    this.expected = expected;
    this.actual = actual;
  }
}

/** No such run (or attempt, or worker epoch). */
export class NotFoundError extends Error {
  constructor(what: string, id: string) {
    super(`Unknown ${what}: ${id}`);
    this.name = "NotFoundError";
  }
}

/** A durable JSON value exceeds the 1 MiB limit. */
export class ValueTooLargeError extends RangeError {
  readonly field: string;
  readonly bytes: number;
  constructor(field: string, bytes: number, limit: number) {
    super(`Value too large for ${field}: ${bytes} bytes exceeds the ${limit} byte limit`);
    this.name = "ValueTooLargeError";
    this.field = field;
    this.bytes = bytes;
  }
}

/**
 * The request id already has a receipt: with another fingerprint (`otherPayload`, answer
 * `conflict`) or the same one (`alreadyRecorded`, answer with the stored receipt).
 */
export class RequestConflictError extends Error {
  readonly requestId: string;
  readonly kind: "otherPayload" | "alreadyRecorded";
  constructor(requestId: string, kind: "otherPayload" | "alreadyRecorded") {
    super(
      kind === "otherPayload"
        ? `Request id reused with another payload: ${requestId}`
        : `Request already recorded: ${requestId}`,
    );
    this.name = "RequestConflictError";
    this.requestId = requestId;
    this.kind = kind;
  }
}

/**
 * Why an answer to a checkpoint or human decision was refused; nothing changed. `code` is stable
 * (the host maps it to an outcome): `notWaiting`, `nodeNotWaiting`, `staleAttempt`,
 * `alreadyAnswered`, `wrongKind`, `deadlinePassed`, `invalidAnswer`.
 */
export class AnswerRefusedError extends Error {
  readonly code: AnswerRefusal;
  constructor(code: AnswerRefusal, message: string) {
    super(message);
    this.name = "AnswerRefusedError";
    this.code = code;
  }
}

export const ANSWER_REFUSALS = [
  "notWaiting",
  "nodeNotWaiting",
  "staleAttempt",
  "alreadyAnswered",
  "wrongKind",
  "deadlinePassed",
  "invalidAnswer",
] as const;
export type AnswerRefusal = (typeof ANSWER_REFUSALS)[number];

/**
 * A plain resume of a run blocked on an ambiguous effect: refused, because the effect may have
 * applied. The operator records what happened with the separate recovery operation
 * (`effect.resolve`); the fields name the attempt and effects it is about.
 */
export class AmbiguousEffectError extends TransitionError {
  readonly attemptId: string;
  readonly nodeId: string;
  readonly effectIds: readonly string[];
  constructor(runId: string, blocked: { attemptId: string; nodeId: string; effectIds: string[] }) {
    super(
      runId,
      "resume",
      "it is blocked",
      `node "${blocked.nodeId}" (attempt ${blocked.attemptId}${
        blocked.effectIds.length > 0 ? `, effect ${blocked.effectIds.join(", ")}` : ""
      }) may have applied its effect`,
    );
    this.name = "AmbiguousEffectError";
    this.attemptId = blocked.attemptId;
    this.nodeId = blocked.nodeId;
    this.effectIds = blocked.effectIds;
  }
}

/**
 * A resume of a run blocked over its budget: resuming would only block it again at its next
 * model step. A person raises the budget (`budget --raise`) or cancels the run.
 */
export class BudgetExceededError extends TransitionError {
  /** `stop`: the budget that stopped the run and its spend (budget-stop.ts), when known. */
  constructor(runId: string, stop: string | null = null) {
    super(
      runId,
      "resume",
      "it is blocked at its budget",
      `${
        stop ?? "its spend reached its budget"
      }: raise the budget with \`pi-workflows budget ${runId} ` +
        "--raise <USD>` (or --raise-tokens <N>), or cancel the run",
    );
    this.name = "BudgetExceededError";
  }
}

/**
 * A session operation refused by the state of what it names; nothing changed. `outcome` is the
 * response outcome it means, `code` the stable error code, the message one line for the model or
 * the Pi user. Both outboxes (`notificationNotFound`, `turnNotFound`, `wrongSession`,
 * `notEligible`, `alreadyDelivered`, `alreadyResolved`) and interactive steps (wrong step, stale
 * attempt, another session, not pending...) refuse with it.
 */
export class RefusedError extends Error {
  readonly outcome: "rejected" | "conflict" | "notFound";
  readonly code: string;
  constructor(outcome: "rejected" | "conflict" | "notFound", code: string, message: string) {
    super(message);
    this.name = "RefusedError";
    this.outcome = outcome;
    this.code = code;
  }
}

/**
 * True for a write that failed because the state directory's disk is full: SQLite's
 * `SQLITE_FULL` (13, "database or disk is full"), or a file write's `ENOSPC`.
 */
export function isDiskFull(error: unknown): boolean {
  const e = error as { errcode?: unknown; code?: unknown; message?: unknown } | null;
  if (e === null || typeof e !== "object") return false;
  // SQLite's extended codes keep the primary code in the low byte.
  if (typeof e.errcode === "number" && (e.errcode & 0xff) === 13) return true;
  if (e.code === "ENOSPC") return true;
  return typeof e.message === "string" && /database or disk is full|ENOSPC/.test(e.message);
}

/**
 * True for a statement that failed because another connection held the database past the busy
 * timeout: SQLite's `SQLITE_BUSY` (5) or `SQLITE_LOCKED` (6), "database is locked".
 */
export function isDatabaseBusy(error: unknown): boolean {
  const e = error as { errcode?: unknown; message?: unknown } | null;
  if (e === null || typeof e !== "object") return false;
  // SQLite's extended codes keep the primary code in the low byte.
  if (typeof e.errcode === "number" && [5, 6].includes(e.errcode & 0xff)) return true;
  return typeof e.message === "string" && /database is locked|SQLITE_BUSY/i.test(e.message);
}

/** What a command that could not be recorded on a full disk answers: the code and its message. */
export function diskFullMessage(statePath: string, operation: string): string {
  return `Command ${operation} was not recorded: the disk of the state directory ` +
    `${dirname(statePath)} is full (nothing changed). Free space there and run it again; ` +
    "status, list and other reads still work meanwhile";
}

/**
 * The eight failure classes of the spec: a closed set with stable codes. Every layer reports a
 * failure under exactly one class, so a claim loss never looks like a crash and a crash never
 * looks like a node failure. The codes are stored in SQLite and sent on the wire: never rename one.
 */

export const FAILURE_CLASSES = [
  "claimLost",
  "workerCrashed",
  "workerTimedOut",
  "hostUnavailable",
  "sourceChanged",
  "effectAmbiguous",
  "nodeFailed",
  "protocolRejected",
] as const;
export type FailureClass = (typeof FAILURE_CLASSES)[number];

/** What each class means, in the words the user sees before the detail. */
export const FAILURE_SUMMARIES: Readonly<Record<FailureClass, string>> = {
  claimLost: "Claim lost: another generation owns the run or the claim expired",
  workerCrashed: "Worker crashed: the worker exited without a terminal protocol message",
  workerTimedOut: "Worker timed out: the worker exceeded a declared deadline",
  hostUnavailable: "Host unavailable: the client cannot reach or start the workflow host",
  sourceChanged: "Source changed: the workflow source does not match the saved identity",
  effectAmbiguous: "Effect ambiguous: an external action may have applied without a receipt",
  nodeFailed: "Node failed: the workflow code returned a failure",
  protocolRejected:
    "Protocol rejected: a message failed schema, revision, attempt or idempotency checks",
};

export function isFailureClass(value: unknown): value is FailureClass {
  return typeof value === "string" && (FAILURE_CLASSES as readonly string[]).includes(value);
}

/**
 * `"<summary>: <detail>"`, one line, bounded; newlines in the detail become spaces. A detail
 * that already starts with this class's summary (a wrapped error of the same class) is not
 * prefixed again.
 */
export function failureMessage(failureClass: FailureClass, detail?: string): string {
  const summary = FAILURE_SUMMARIES[failureClass];
  if (detail === undefined || detail.trim() === "") return summary;
  const flat = oneLine(detail);
  return flat.startsWith(summary) ? flat : `${summary}: ${flat}`;
}

const MAX_DETAIL_CHARS = 1000;

/** Collapses whitespace runs (including newlines) and bounds the length of a message detail. */
export function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > MAX_DETAIL_CHARS ? `${flat.slice(0, MAX_DETAIL_CHARS - 1)}…` : flat;
}

/**
 * Base class for errors that belong to one failure class. Layers above catch by class
 * (`instanceof`) or by `failureClass` after crossing a process boundary.
 */
export class WorkflowFailureError extends Error {
  readonly failureClass: FailureClass;
  constructor(failureClass: FailureClass, detail?: string, options?: ErrorOptions) {
    super(failureMessage(failureClass, detail), options);
    this.name = "WorkflowFailureError";
    this.failureClass = failureClass;
  }
}

/** The client could not reach or start the host. The message says what to do next. */
export class HostUnavailableError extends WorkflowFailureError {
  constructor(detail: string, options?: ErrorOptions) {
    super("hostUnavailable", detail, options);
    this.name = "HostUnavailableError";
  }
}

/**
 * The host runs but serves as many connections as it allows: retry shortly. It is not a stopped
 * host, so nothing starts another one.
 */
export class HostBusyError extends HostUnavailableError {
  constructor(detail: string, options?: ErrorOptions) {
    super(detail, options);
    this.name = "HostBusyError";
  }
}

/** A peer refused a message: bad schema, stale revision, wrong attempt, or a reused id. */
export class ProtocolRejectedError extends WorkflowFailureError {
  /** The machine code the peer gave, e.g. `invalidRequest`, `frameTooLarge`. */
  readonly code: string;
  constructor(code: string, detail: string, options?: ErrorOptions) {
    super("protocolRejected", detail, options);
    this.name = "ProtocolRejectedError";
    this.code = code;
  }
}

/** The detail of a failure's message without its class summary, for wrapping it in another. */
export function failureDetail(error: WorkflowFailureError): string {
  const prefix = `${FAILURE_SUMMARIES[error.failureClass]}: `;
  return error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message;
}

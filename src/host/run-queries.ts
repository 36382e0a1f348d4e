/**
 * `run.status` and `run.list`: reads from the store, answered at once (no receipt: they change
 * nothing). `run.status` also pages the run's events after a cursor, which `start --wait` uses
 * to stream progress.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { HostRequest } from "../protocol/host-request.ts";
import { type HostResponse, successResponse } from "../protocol/host-response.ts";
import type { AttemptSummary } from "../protocol/run-operations.ts";
import { listAmbiguousEffects } from "../state/effect-queries.ts";
import { isTerminalRunState } from "../state/transitions/common.ts";
import { NotFoundError } from "../state/errors.ts";
import { readWaiting, type WaitingRecord } from "../state/waiting-queries.ts";
import { listRunNotifications, type NotificationView } from "../state/outbox-queries.ts";
import { ANSWER_OPERATIONS } from "../protocol/decision-request.ts";
import { listEvents, listNodeUpdates, listRuns, readRunStatus } from "../state/queries.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { runSummary } from "./run-summary.ts";

const DEFAULT_EVENT_LIMIT = 200;

export function runStatusQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  if (request.operation !== "run.status") throw new TypeError("Expected run.status");
  const runId = request.runId!;
  // One query for the run and its attempts.
  const status = readRunStatus(rt.store, runId);
  if (!status) throw new NotFoundError("run", runId);
  const view = status.run;
  // The protocol leaves absent fields out where the state layer says null.
  const attempts: AttemptSummary[] = status.attempts.map((a) => {
    const attempt: AttemptSummary = {
      attemptId: a.attemptId,
      nodeId: a.nodeId,
      sequence: a.sequence,
      nodeKind: a.nodeKind,
      effect: a.effect,
      state: a.state,
      startedAt: a.startedAt,
      deadlineAt: a.deadlineAt,
    };
    if (a.finishedAt !== null) attempt.finishedAt = a.finishedAt;
    if (a.error !== null) attempt.error = a.error;
    return attempt;
  });
  // Events are paged only for a caller that follows the run (`eventsAfter`), which keeps the
  // plain status answer small and fast.
  const after = request.payload.eventsAfter;
  const receipt: { [key: string]: JsonValue } = {
    run: runSummary(view) as unknown as JsonValue,
    attempts: attempts as unknown as JsonValue,
  };
  if (view.state === "waiting") {
    const waiting = readWaiting(rt.store, runId);
    if (waiting) receipt.waiting = waitingView(waiting);
  }
  // Effects that may have applied without a receipt: a blocked run waits for the operator's
  // verdict (`effect.resolve`), a finished one keeps them for a check by hand.
  if (view.blockedReason === "effectAmbiguous" || isTerminalRunState(view.state)) {
    const ambiguous = listAmbiguousEffects(rt.store, runId);
    if (ambiguous.length > 0) {
      receipt.ambiguousEffects = ambiguous.map((e) => ({
        effectId: e.effectId,
        attemptId: e.attemptId,
        nodeId: e.nodeId,
        managed: e.managed,
      }));
    }
  }
  if (request.payload.includeUpdates) {
    receipt.updates = listNodeUpdates(rt.store, runId) as unknown as JsonValue;
  }
  if (request.payload.includeNotifications) {
    receipt.notifications = notificationsView(listRunNotifications(rt.store, runId));
  }
  if (after !== undefined) {
    const rows = listEvents(
      rt.store,
      runId,
      after,
      request.payload.eventLimit ?? DEFAULT_EVENT_LIMIT,
    );
    receipt.events = rows.map((row) => eventOf(row.seq, row.type, row.at, row.payload));
    receipt.lastEventSeq = rows.at(-1)?.seq ?? after;
  }
  return successResponse({
    requestId: request.requestId,
    hostEpoch: rt.epoch,
    revision: view.revision,
    receipt,
  });
}

export function listRunsQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  if (request.operation !== "run.list") throw new TypeError("Expected run.list");
  // Outputs stay out of the list (each may be up to 1 MiB); `run.status` shows one.
  const runs = listRuns(rt.store, { all: request.payload.all, limit: request.payload.limit })
    .map((view) => {
      const { output: _, ...summary } = runSummary(view);
      return summary;
    });
  return successResponse({
    requestId: request.requestId,
    hostEpoch: rt.epoch,
    receipt: { runs: runs as unknown as JsonValue },
  });
}

/** What a waiting run asks, as `run.status` shows it (protocol `WaitingSchema`). */
export function waitingView(w: WaitingRecord): JsonValue {
  const view: { [key: string]: JsonValue } = {
    kind: w.kind,
    operation: ANSWER_OPERATIONS[w.kind],
    decisionId: w.decisionId,
    nodeId: w.nodeId,
    attemptId: w.attemptId,
    since: w.since,
    deadlineAt: w.deadlineAt,
    default: w.defaultAt !== null && w.defaultAnswer !== undefined
      ? { at: w.defaultAt, answer: w.defaultAnswer }
      : null,
  };
  if (w.kind === "humanDecision") view.decision = w.request;
  else view.request = w.request;
  if (w.answerSchema !== undefined) view.answerSchema = w.answerSchema;
  return view;
}

/** A stored event as the protocol shows it: node and attempt ids lifted out of the payload. */
function eventOf(seq: number, type: string, at: number, payload: JsonValue): JsonValue {
  const { nodeId, attemptId, ...data } = isRecord(payload) ? payload : {};
  const event: { [key: string]: JsonValue } = { seq, type, at };
  if (typeof nodeId === "string") event.nodeId = nodeId;
  if (typeof attemptId === "string") event.attemptId = attemptId;
  if (Object.keys(data).length > 0) event.data = data;
  return event;
}

function isRecord(value: JsonValue): value is { [key: string]: JsonValue } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function notificationsView(rows: NotificationView[]): JsonValue {
  return rows.map(({ deliveredAt, ...rest }) =>
    deliveredAt === null ? rest : { ...rest, deliveredAt }
  );
}

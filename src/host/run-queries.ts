/**
 * `run.status` and `run.list`: reads from the store, answered at once (no receipt: they change
 * nothing). `run.status` also pages the run's events after a cursor, which `start --wait` uses
 * to stream progress.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { HostRequest } from "../protocol/host-request.ts";
import type { OperationReceipt } from "../protocol/host-operations.ts";
import { failureResponse, type HostResponse, receiptResponse } from "../protocol/host-response.ts";
import type { AttemptSummary } from "../protocol/run-operations.ts";
import { listAmbiguousEffects } from "../state/effect-queries.ts";
import { isTerminalRunState } from "../state/transitions/common.ts";
import { NotFoundError } from "../state/errors.ts";
import {
  countRuns,
  listEvents,
  listNodeUpdates,
  listRuns,
  readRunStatus,
  type RunCursor,
} from "../state/queries.ts";
import { DEFAULT_STATUS_ATTEMPTS } from "../protocol/run-operations.ts";
import { ANSWER_BUDGET_BYTES, jsonBytes, prefixWithin, suffixWithin } from "./answer-budget.ts";
import { readWaiting, type WaitingRecord } from "../state/waiting-queries.ts";
import { readRunInteraction } from "../state/interaction-queries.ts";
import { listRunNotifications, type NotificationView } from "../state/outbox-queries.ts";
import { readDefinitionSnapshot } from "../state/viewer-step-queries.ts";
import { readSourceChanges } from "./accept-source.ts";
import { ANSWER_OPERATIONS } from "../protocol/decision-request.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { runSummary } from "./run-summary.ts";
import { cachedStatus, rememberStatus } from "./status-cache.ts";
import { lastStepLine } from "../base/step-output-files.ts";
import { dirname, join } from "node:path";
import { isPlainStatusPayload } from "../protocol/host-request-fast.ts";

const DEFAULT_EVENT_LIMIT = 200;

export function runStatusQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  if (request.operation !== "run.status") throw new TypeError("Expected run.status");
  const runId = request.runId!;
  const payload = request.payload;
  // A plain status answer is reused until the next commit (status-cache.ts).
  const plain = isPlainStatusPayload(payload);
  if (plain) {
    const cached = cachedStatus(rt.store, runId, request.requestId);
    if (cached) return cached;
  }
  const status = readRunStatus(rt.store, runId, {
    limit: payload.attemptLimit ?? DEFAULT_STATUS_ATTEMPTS,
    ...(payload.attemptsAfter !== undefined ? { after: payload.attemptsAfter } : {}),
  });
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
    if (a.adoptedFrom !== null) attempt.adoptedFrom = a.adoptedFrom;
    if (a.usage !== undefined) attempt.usage = a.usage;
    if (a.submissions !== undefined) attempt.submissions = a.submissions;
    return attempt;
  });
  const summary = runSummary(view);
  const receipt: OperationReceipt<"run.status"> = {
    run: summary,
    attemptCount: status.attemptCount,
    attempts: [],
  };
  // The run's owner asks (the socket is user-only): where its Pi conversation is.
  if (view.piSessionFile !== null) {
    receipt.pi = { context: view.piContext ?? "none", sessionFile: view.piSessionFile };
  }
  if (view.state === "waiting") {
    const waiting = readWaiting(rt.store, runId);
    if (waiting) receipt.waiting = waitingView(waiting);
    const interaction = readRunInteraction(rt.store, runId);
    if (interaction) receipt.interaction = { ...interaction };
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
  if (view.blockedReason === "workflowSourceChanged") {
    const changes = readSourceChanges(rt.store, runId);
    if (changes.length > 0) receipt.sourceChanges = changes;
  }
  if (payload.includeDefinition) {
    const definition = readDefinitionSnapshot(rt.store, view.definitionDigest);
    // Stored once per digest after the resolver's snapshot passed its schema; not checked whole
    // again here (tens of ms of the host's loop at 10,000 nodes; the client checks what it reads).
    if (definition !== undefined) receipt.definition = definition as StatusReceipt["definition"];
  }
  // The answer fits one message: the output (up to the node output limit) and the waiting
  // request first, then as many events, updates (in half the room left) and attempts as fit;
  // the cursors page through the rest.
  let room = ANSWER_BUDGET_BYTES - status.outputBytes -
    jsonBytes({
      ...summary,
      output: null,
      waiting: receipt.waiting ?? null,
      ambiguousEffects: receipt.ambiguousEffects ?? null,
      sourceChanges: receipt.sourceChanges ?? null,
      definition: receipt.definition ?? null,
      pi: receipt.pi ?? null,
    });
  // Events are paged only for a caller that follows the run (`eventsAfter`), which keeps the
  // plain status answer small and fast.
  const after = payload.eventsAfter;
  if (after !== undefined) {
    const rows = listEvents(rt.store, runId, after, payload.eventLimit ?? DEFAULT_EVENT_LIMIT);
    const events = prefixWithin(
      rows.map((row) => eventOf(row.seq, row.type, row.at, row.payload)),
      room,
    );
    room -= events.bytes;
    receipt.events = events.items;
    receipt.lastEventSeq = (events.items.at(-1) as { seq: number } | undefined)?.seq ?? after;
    // A follower shows what the running step printed last (read from its output file).
    const open = status.attempts.at(-1);
    if (open?.state === "running") {
      const line = lastStepLine(join(dirname(rt.store.path), "workers"), open.attemptId);
      if (line !== null) receipt.lastOutput = { attemptId: open.attemptId, line };
    }
  }
  if (payload.includeUpdates) {
    const updates = prefixWithin(listNodeUpdates(rt.store, runId), Math.floor(room / 2));
    room -= updates.bytes;
    receipt.updates = updates.items;
  }
  if (payload.includeNotifications) {
    const notifications = suffixWithin(
      notificationsView(listRunNotifications(rt.store, runId)),
      Math.floor(room / 2),
    );
    room -= notifications.bytes;
    receipt.notifications = notifications.items;
  }
  receipt.attempts =
    (payload.attemptsAfter === undefined
      ? suffixWithin(attempts, room)
      : prefixWithin(attempts, room)).items;
  const response = receiptResponse(request, rt.epoch, receipt, { revision: view.revision });
  // Files change without a revision: a source-blocked run's answer is not kept.
  return plain && !receipt.sourceChanges ? rememberStatus(rt.store, runId, response) : response;
}

export function listRunsQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  if (request.operation !== "run.list") throw new TypeError("Expected run.list");
  const { all, limit, before } = request.payload;
  const cursor = before === undefined ? undefined : parseRunCursor(before);
  if (cursor === null) {
    return failureResponse({
      requestId: request.requestId,
      hostEpoch: rt.epoch,
      outcome: "rejected",
      code: "invalidRequest",
      message: "Invalid run.list cursor: send the `next` value of the previous page",
    });
  }
  // One more than asked tells whether another page follows.
  const views = listRuns(rt.store, {
    all,
    limit: limit + 1,
    ...(cursor ? { before: cursor } : {}),
  });
  // Outputs stay out of the list (each may be up to 1 MiB); `run.status` shows one.
  const page = prefixWithin(
    views.slice(0, limit).map((view) => {
      const { output: _, ...summary } = runSummary(view);
      return summary;
    }),
    ANSWER_BUDGET_BYTES - 64,
  );
  const last = views[page.items.length - 1];
  const receipt: OperationReceipt<"run.list"> = {
    runs: page.items,
    total: countRuns(rt.store, { all }),
  };
  if (views.length > page.items.length && last) {
    receipt.next = `${last.createdAt}:${last.runId}`;
  }
  return receiptResponse(request, rt.epoch, receipt);
}

/** `<createdAt>:<runId>`, the `next` cursor `run.list` hands out. */
function parseRunCursor(text: string): RunCursor | null {
  const match = /^(\d{1,16}):([\x21-\x7e]{1,200})$/.exec(text);
  return match ? { createdAt: Number(match[1]), runId: match[2] } : null;
}

/** What a waiting run asks, as `run.status` shows it (protocol `WaitingSchema`). */
type StatusReceipt = OperationReceipt<"run.status">;

type WaitingView = NonNullable<StatusReceipt["waiting"]>;

/** The request, its default and answer schema are stored values the host checked before. */
export function waitingView(w: WaitingRecord): WaitingView {
  const view: WaitingView = {
    kind: w.kind,
    operation: ANSWER_OPERATIONS[w.kind],
    decisionId: w.decisionId,
    nodeId: w.nodeId,
    attemptId: w.attemptId,
    since: w.since,
    deadlineAt: w.deadlineAt,
    default: w.defaultAt !== null && w.defaultAnswer !== undefined
      ? {
        at: w.defaultAt,
        answer: w.defaultAnswer as NonNullable<WaitingView["default"]>["answer"],
      }
      : null,
  };
  if (w.kind === "humanDecision") view.decision = w.request as WaitingView["decision"];
  else view.request = w.request;
  if (w.answerSchema !== undefined) {
    view.answerSchema = w.answerSchema as WaitingView["answerSchema"];
  }
  return view;
}

/** A stored event as the protocol shows it: node and attempt ids lifted out of the payload. */
function eventOf(
  seq: number,
  type: string,
  at: number,
  payload: JsonValue,
): NonNullable<StatusReceipt["events"]>[number] {
  const { nodeId, attemptId, ...data } = isRecord(payload) ? payload : {};
  const event: NonNullable<StatusReceipt["events"]>[number] = { seq, type, at };
  if (typeof nodeId === "string") event.nodeId = nodeId;
  if (typeof attemptId === "string") event.attemptId = attemptId;
  if (Object.keys(data).length > 0) event.data = data;
  return event;
}

function isRecord(value: JsonValue): value is { [key: string]: JsonValue } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function notificationsView(rows: NotificationView[]): NonNullable<StatusReceipt["notifications"]> {
  return rows.map(({ deliveredAt, ...rest }) =>
    deliveredAt === null ? rest : { ...rest, deliveredAt }
  );
}

/**
 * The Pi outbox operations of an origin session:
 *
 *   notification.claim    the session's undelivered notifications under a short lease
 *   notification.deliver  the session entry that shows one (receipt)
 *   turn.claim            the session's next owed turn, with its text, under a short lease
 *   turn.resolve          the session entry of the turn the session started (receipt)
 *
 * A lease is held by the request (client id and request id), so a client that resends a claim
 * after a lost answer holds the same lease, while another Pi process on the same session (same
 * client id, other request) sees the items as `leased` and does not show them.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { HostRequest } from "../protocol/host-request.ts";
import { type HostResponse, successResponse } from "../protocol/host-response.ts";
import type { CommandReceiptInput } from "../state/host-commands.ts";
import { readTurnRunFacts } from "../state/outbox-queries.ts";
import { decodeValue } from "../state/values.ts";
import { claimNotifications, deliverNotification } from "../state/transitions/notifications.ts";
import { type ClaimedTurn, claimTurn, resolveTurn } from "../state/transitions/turn-delivery.ts";
import { withReceipt } from "./command-receipts.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { fallbackText, presentationText } from "./turn-text.ts";

type Request<Op extends HostRequest["operation"]> = Extract<HostRequest, { operation: Op }>;

function as<Op extends HostRequest["operation"]>(request: HostRequest, op: Op): Request<Op> {
  if (request.operation !== op) throw new TypeError(`Expected ${op}`);
  return request as Request<Op>;
}

function leaseHolder(request: HostRequest): string {
  return `${request.clientId}\n${request.requestId}`;
}

function answer(rt: HostRuntime, request: HostRequest, receipt: JsonValue): HostResponse {
  return successResponse({
    requestId: request.requestId,
    hostEpoch: rt.epoch,
    receipt: receipt as { [key: string]: JsonValue },
  });
}

export function claimNotificationsQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  const { payload } = as(request, "notification.claim");
  const claim = claimNotifications(rt.store, {
    sessionId: payload.sessionId,
    holder: leaseHolder(request),
    limit: payload.limit,
  });
  return answer(rt, request, claim as unknown as JsonValue);
}

export function deliverNotificationCommand(
  rt: HostRuntime,
  request: HostRequest,
): Promise<HostResponse> {
  return withReceipt(rt, request, (rt, request, receipt: CommandReceiptInput) => {
    const { payload } = as(request, "notification.deliver");
    const result = deliverNotification(rt.store, { ...payload, receipt });
    return { ...answer(rt, request, result.body), outcome: result.outcome };
  });
}

export function claimTurnQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  const { payload } = as(request, "turn.claim");
  const claim = claimTurn(rt.store, {
    sessionId: payload.sessionId,
    holder: leaseHolder(request),
    userTurnAt: payload.userTurnAt,
  });
  return answer(rt, request, {
    turn: claim.turn ? turnView(rt, claim.turn) : null,
    leased: claim.leased,
  });
}

function turnView(rt: HostRuntime, turn: ClaimedTurn): JsonValue {
  const run = readTurnRunFacts(rt.store, turn.runId)!;
  const facts = decodeValue(turn.factsJson) as { prompt?: string } | undefined;
  const text = turn.cause === "presentation"
    ? presentationText(run, facts?.prompt ?? "")
    : fallbackText(run);
  return {
    turnIntentId: turn.turnIntentId,
    runId: turn.runId,
    workflowName: run.workflowName,
    cause: turn.cause,
    ...text,
  };
}

export function resolveTurnCommand(rt: HostRuntime, request: HostRequest): Promise<HostResponse> {
  return withReceipt(rt, request, (rt, request, receipt: CommandReceiptInput) => {
    const { payload } = as(request, "turn.resolve");
    const result = resolveTurn(rt.store, { ...payload, receipt });
    return { ...answer(rt, request, result.body), outcome: result.outcome };
  });
}

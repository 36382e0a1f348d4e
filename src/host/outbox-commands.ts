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
import { type HostRequest, requestFor } from "../protocol/host-request.ts";
import type { HostOperation, OperationReceipt } from "../protocol/host-operations.ts";
import { type HostResponse, receiptResponse } from "../protocol/host-response.ts";
import type { CommandReceiptInput } from "../state/host-commands.ts";
import { readTurnRunFacts } from "../state/outbox-queries.ts";
import { decodeValue } from "../state/values.ts";
import { claimNotifications, deliverNotification } from "../state/transitions/notifications.ts";
import { type ClaimedTurn, claimTurn, resolveTurn } from "../state/transitions/turn-delivery.ts";
import { withReceipt } from "./command-receipts.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { fallbackText, presentationText, waitingPresentationText } from "./turn-text.ts";

function leaseHolder(request: HostRequest): string {
  return `${request.clientId}\n${request.requestId}`;
}

function answer<Op extends HostOperation>(
  rt: HostRuntime,
  request: { operation: Op; requestId: string },
  receipt: OperationReceipt<Op>,
  outcome: "accepted" | "adopted" = "accepted",
): HostResponse {
  return receiptResponse(request, rt.epoch, receipt, { adopted: outcome === "adopted" });
}

export function claimNotificationsQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  const claimRequest = requestFor(request, "notification.claim");
  const { payload } = claimRequest;
  const claim = claimNotifications(rt.store, {
    sessionId: payload.sessionId,
    holder: leaseHolder(request),
    limit: payload.limit,
  });
  return answer(rt, claimRequest, claim);
}

export function deliverNotificationCommand(
  rt: HostRuntime,
  request: HostRequest,
): Promise<HostResponse> {
  return withReceipt(rt, request, (rt, request, receipt: CommandReceiptInput) => {
    const deliver = requestFor(request, "notification.deliver");
    const result = deliverNotification(rt.store, { ...deliver.payload, receipt });
    // The transition built and stored the receipt (JSON in host_commands).
    return answer(rt, deliver, result.body, result.outcome);
  });
}

export function claimTurnQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  const claimRequest = requestFor(request, "turn.claim");
  const { payload } = claimRequest;
  const claim = claimTurn(rt.store, {
    sessionId: payload.sessionId,
    holder: leaseHolder(request),
    userTurnAt: payload.userTurnAt,
  });
  return answer(rt, claimRequest, {
    turn: claim.turn ? turnView(rt, claim.turn) : null,
    leased: claim.leased,
  });
}

function turnView(
  rt: HostRuntime,
  turn: ClaimedTurn,
): NonNullable<OperationReceipt<"turn.claim">["turn"]> {
  const run = readTurnRunFacts(rt.store, turn.runId)!;
  const facts = decodeValue(turn.factsJson) as
    | { prompt?: string; problem?: string; waitingOn?: string }
    | undefined;
  const text = turn.cause !== "presentation"
    ? fallbackText(run)
    : facts?.waitingOn !== undefined
    ? waitingPresentationText(run, facts)
    : presentationText(run, facts?.prompt ?? "");
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
    const resolve = requestFor(request, "turn.resolve");
    const result = resolveTurn(rt.store, { ...resolve.payload, receipt });
    // The transition built and stored the receipt (JSON in host_commands).
    return answer(rt, resolve, result.body, result.outcome);
  });
}

/**
 * Idempotent commands. A state-changing command commits its `host_commands` receipt in the same
 * transaction as the change, before the host answers. Then:
 * - the same request id with the same fingerprint gets the stored receipt (outcome as stored);
 * - the same request id with another payload gets `conflict`;
 * - a new request id with an idempotency key this client already used for the same operation
 *   gets the stored receipt as `adopted` (or `conflict` when the payload differs);
 * - two copies of one request arriving at once share one execution;
 * - a request past its `notAfter` with no receipt is refused `requestExpired` (not applied).
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { type HostRequest, requestFingerprint } from "../protocol/host-request.ts";
import {
  failureResponse,
  HOST_ERROR_CODES,
  type HostResponse,
  successResponse,
} from "../protocol/host-response.ts";
import { RequestConflictError } from "../state/errors.ts";
import {
  type CommandReceiptInput,
  findHostCommand,
  findHostCommandByKey,
  type StoredHostCommand,
} from "../state/host-commands.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { crashPoint } from "../base/crash-point.ts";

/** Runs the change and commits `receipt` with it; returns the response it acknowledges. */
export type ReceiptedCommand = (
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
) => Promise<HostResponse> | HostResponse;

const inFlight = new WeakMap<
  HostRuntime,
  Map<string, { fingerprint: string; answer: Promise<HostResponse> }>
>();

export function withReceipt(
  rt: HostRuntime,
  request: HostRequest,
  command: ReceiptedCommand,
): Promise<HostResponse> {
  const fingerprint = requestFingerprint(request);
  let running = inFlight.get(rt);
  if (!running) inFlight.set(rt, running = new Map());
  const pending = running.get(request.requestId);
  if (pending) {
    return pending.fingerprint === fingerprint
      ? pending.answer
      : Promise.resolve(requestIdConflict(rt, request));
  }
  const stored = findHostCommand(rt.store, request.requestId);
  if (stored) {
    return Promise.resolve(
      stored.requestFingerprint === fingerprint
        ? storedResponse(rt, request, stored, false)
        : requestIdConflict(rt, request),
    );
  }
  if (request.idempotencyKey !== undefined) {
    const earlier = findHostCommandByKey(rt.store, {
      clientId: request.clientId,
      operation: request.operation,
      idempotencyKey: request.idempotencyKey,
    });
    if (earlier) {
      return Promise.resolve(
        earlier.requestFingerprint === fingerprint
          ? storedResponse(rt, request, earlier, true)
          : failureResponse({
            requestId: request.requestId,
            hostEpoch: rt.epoch,
            outcome: "conflict",
            code: HOST_ERROR_CODES.requestIdReused,
            message: "Idempotency key reused with another payload: use a new key for a new command",
          }),
      );
    }
  }
  if (request.notAfter !== undefined && Date.now() > request.notAfter) {
    // The client has given up retrying (or will after this one try): refusing it now, when no
    // receipt exists, makes "not applied" the definite answer.
    return Promise.resolve(failureResponse({
      requestId: request.requestId,
      hostEpoch: rt.epoch,
      outcome: "rejected",
      code: HOST_ERROR_CODES.requestExpired,
      message:
        "Request not applied: it reached the host after its retry deadline; nothing changed, run the command again",
    }));
  }
  const receipt: CommandReceiptInput = {
    requestId: request.requestId,
    clientId: request.clientId,
    operation: request.operation,
    idempotencyKey: request.idempotencyKey ?? null,
    requestFingerprint: fingerprint,
  };
  const answer = (async () => {
    try {
      // Crash tests: the request was read, nothing of it is committed.
      crashPoint(`host.command.${request.operation}.beforeCommit`);
      const response = await command(rt, request, receipt);
      // Crash tests: the command and its receipt are committed, the answer is not sent.
      crashPoint(`host.command.${request.operation}.afterCommit`);
      return response;
    } catch (error) {
      // A racing copy committed first (e.g. on another connection): answer from its receipt.
      if (error instanceof RequestConflictError) {
        const winner = findHostCommand(rt.store, request.requestId);
        if (winner?.requestFingerprint === fingerprint) {
          return storedResponse(rt, request, winner, false);
        }
        return requestIdConflict(rt, request);
      }
      throw error;
    } finally {
      running.delete(request.requestId);
    }
  })();
  running.set(request.requestId, { fingerprint, answer });
  return answer;
}

function storedResponse(
  rt: HostRuntime,
  request: HostRequest,
  stored: StoredHostCommand,
  adopted: boolean,
): HostResponse {
  const outcome = adopted ? "adopted" : stored.outcome;
  const fields = {
    requestId: request.requestId,
    hostEpoch: rt.epoch,
    revision: stored.acceptedRevision ?? undefined,
  };
  if (outcome === "accepted" || outcome === "adopted") {
    return successResponse({
      ...fields,
      adopted: outcome === "adopted",
      receipt: asRecord(stored.receipt),
    });
  }
  const error = asRecord(stored.receipt).error as { code?: string; message?: string } | undefined;
  return failureResponse({
    ...fields,
    outcome,
    code: typeof error?.code === "string" ? error.code : outcome,
    message: typeof error?.message === "string" ? error.message : `Stored outcome: ${outcome}`,
  });
}

function requestIdConflict(rt: HostRuntime, request: HostRequest): HostResponse {
  return failureResponse({
    requestId: request.requestId,
    hostEpoch: rt.epoch,
    outcome: "conflict",
    code: HOST_ERROR_CODES.requestIdReused,
    message: "Request id reused with another payload: use a new request id for a new command",
  });
}

function asRecord(value: JsonValue): { [key: string]: JsonValue } {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value : {};
}

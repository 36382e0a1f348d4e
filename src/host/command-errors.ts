/**
 * Maps an error thrown by a command handler (mostly by a state transition) to the one response
 * outcome that means it, so a caller can tell a missing run from a stale revision from a refused
 * transition. Unexpected errors are logged by name only and answered without internals.
 */
import {
  failureResponse,
  HOST_ERROR_CODES,
  type HostOutcome,
  type HostResponse,
} from "../protocol/host-response.ts";
import type { HostRequest } from "../protocol/host-request.ts";
import {
  AmbiguousEffectError,
  AnswerRefusedError,
  ClaimLostError,
  diskFullMessage,
  isDatabaseBusy,
  isDiskFull,
  NotFoundError,
  RefusedError,
  RequestConflictError,
  RevisionConflictError,
  TransitionError,
  ValueTooLargeError,
} from "../state/errors.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { ControllerRefusal } from "../state/controllers/errors.ts";
import { logError } from "./host-log.ts";

export function errorResponse(rt: HostRuntime, request: HostRequest, error: unknown): HostResponse {
  const answer = (
    outcome: Exclude<HostOutcome, "accepted" | "adopted">,
    code: string,
    message: string,
    revision?: number,
  ) =>
    failureResponse({
      requestId: request.requestId,
      hostEpoch: rt.epoch,
      outcome,
      code,
      message,
      revision,
    });
  if (error instanceof ControllerRefusal) {
    return answer(error.outcome, error.code, error.message, error.revision);
  }
  if (error instanceof NotFoundError) {
    return answer("notFound", HOST_ERROR_CODES.runNotFound, error.message);
  }
  if (error instanceof RevisionConflictError) {
    return answer(
      "conflict",
      HOST_ERROR_CODES.revisionMismatch,
      `Revision conflict: run ${error.runId} is at revision ${error.actual}, the request expected ${error.expected}`,
      error.actual,
    );
  }
  if (error instanceof RequestConflictError) {
    return answer(
      "conflict",
      HOST_ERROR_CODES.requestIdReused,
      "Request id reused with another payload: use a new request id for a new command",
    );
  }
  if (error instanceof AmbiguousEffectError) {
    return answer("rejected", "effectAmbiguous", ambiguousEffectMessage(error));
  }
  if (error instanceof AnswerRefusedError) {
    // A race lost to another answer, a default or a newer attempt is a conflict; a request that
    // could never be right (wrong node, kind or answer) is rejected.
    const conflict = error.code === "staleAttempt" || error.code === "alreadyAnswered" ||
      error.code === "deadlinePassed";
    return answer(conflict ? "conflict" : "rejected", error.code, error.message);
  }
  if (error instanceof RefusedError) {
    return answer(error.outcome, error.code, error.message);
  }
  if (error instanceof TransitionError) {
    return answer("rejected", "invalidTransition", error.message);
  }
  if (error instanceof ClaimLostError) {
    return answer("claimLost", "claimLost", error.message);
  }
  if (error instanceof ValueTooLargeError) {
    return answer("rejected", "valueTooLarge", error.message);
  }
  if (isDiskFull(error)) {
    rt.log("command.diskFull", { operation: request.operation });
    return answer(
      "rejected",
      HOST_ERROR_CODES.diskFull,
      diskFullMessage(rt.store.path, request.operation),
    );
  }
  if (isDatabaseBusy(error)) {
    return answer(
      "unavailable",
      "stateBusy",
      "Host unavailable: the state database stayed locked; retry shortly",
    );
  }
  rt.log("command.error", {
    operation: request.operation,
    name: (error as Error)?.name ?? typeof error,
    error: logError(error),
  });
  return answer(
    "rejected",
    HOST_ERROR_CODES.internal,
    `Command ${request.operation} failed inside the host: ${
      (error as Error)?.name ?? "error"
    } (see host.log)`,
  );
}

/** Why a plain resume is refused, and the exact recovery command (the run id and attempt). */
export function ambiguousEffectMessage(error: AmbiguousEffectError): string {
  const effects = error.effectIds.length > 0 ? `, effect ${error.effectIds.join(", ")}` : "";
  return `Resume refused: run ${error.runId} is blocked: node "${error.nodeId}" (attempt ` +
    `${error.attemptId}${effects}) may have applied its effect; check the external system, ` +
    `then record what happened with 'pi-workflows effect resolve ${error.runId} ` +
    `${error.attemptId} --applied <output-json>' (or --not-applied, or --retry)`;
}

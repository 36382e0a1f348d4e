/**
 * From one decoded frame to one response: validate with the protocol schemas, check the host
 * epoch and phase, then hand the request to its operation's handler. Operations of the spec that
 * this host does not serve yet are answered `rejected` ("not available yet"). A request that
 * fails validation is answered once and its connection closed; a valid request never closes it.
 */
import type { FrameError } from "../protocol/framing.ts";
import { type HostOperation, SERVED_OPERATIONS } from "../protocol/host-operations.ts";
import { type HostRequest, parseHostRequest } from "../protocol/host-request.ts";
import { fastPlainRunStatus } from "../protocol/host-request-fast.ts";
import {
  failureResponse,
  HOST_ERROR_CODES,
  type HostResponse,
  receiptResponse,
} from "../protocol/host-response.ts";
import { answerCheckpointCommand, answerDecisionCommand } from "./answer-commands.ts";
import { errorResponse } from "./command-errors.ts";
import { resolveEffectCommand } from "./effect-resolve.ts";
import { withReceipt } from "./command-receipts.ts";
import { pruneCommand } from "./prune-command.ts";
import { hostStatus } from "./host-status.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { cancelRunCommand, pauseRunCommand, resumeRunCommand } from "./run-control.ts";
import { listRunsQuery, runStatusQuery } from "./run-queries.ts";
import { raiseBudgetCommand } from "./run-budget.ts";
import { findRunsQuery } from "./run-find.ts";
import { runLogsQuery } from "./run-logs.ts";
import { startRunCommand } from "./run-start.ts";
import { rerunRunCommand } from "./run-rerun.ts";
import {
  claimNotificationsQuery,
  claimTurnQuery,
  deliverNotificationCommand,
  resolveTurnCommand,
} from "./outbox-commands.ts";
import {
  claimInteractionQuery,
  presentInteractionCommand,
  remindInteractionCommand,
  sessionWaitQuery,
  submitInteractionCommand,
  updateInteractionCommand,
} from "./interaction-commands.ts";
import * as controllers from "./controller-commands.ts";
import * as schedules from "./schedule-commands.ts";
import type { HandledFrame } from "./socket-server.ts";

type Handler = (rt: HostRuntime, request: HostRequest) => Promise<HostResponse> | HostResponse;

const HANDLERS: Partial<Record<HostOperation, Handler>> = {
  "run.start": (rt, request) => withReceipt(rt, request, startRunCommand),
  "run.pause": (rt, request) => withReceipt(rt, request, pauseRunCommand),
  "run.resume": (rt, request) => withReceipt(rt, request, resumeRunCommand),
  "run.cancel": (rt, request) => withReceipt(rt, request, cancelRunCommand),
  "run.rerun": (rt, request) => withReceipt(rt, request, rerunRunCommand),
  "run.budget": (rt, request) => withReceipt(rt, request, raiseBudgetCommand),
  "effect.resolve": (rt, request) => withReceipt(rt, request, resolveEffectCommand),
  "interaction.claim": claimInteractionQuery,
  "interaction.present": presentInteractionCommand,
  "interaction.submit": submitInteractionCommand,
  "interaction.update": updateInteractionCommand,
  "interaction.remind": remindInteractionCommand,
  "session.wait": sessionWaitQuery,
  "run.status": runStatusQuery,
  "run.list": listRunsQuery,
  "run.find": findRunsQuery,
  "run.logs": runLogsQuery,
  "checkpoint.answer": (rt, request) => withReceipt(rt, request, answerCheckpointCommand),
  "decision.answer": (rt, request) => withReceipt(rt, request, answerDecisionCommand),
  "notification.claim": claimNotificationsQuery,
  "notification.deliver": deliverNotificationCommand,
  "turn.claim": claimTurnQuery,
  "turn.resolve": resolveTurnCommand,
  "controller.list": controllers.controllerListQuery,
  "controller.get": controllers.controllerGetQuery,
  "controller.apply": (rt, request) => withReceipt(rt, request, controllers.applyControllerCommand),
  "controller.reconcile": (rt, request) =>
    withReceipt(rt, request, controllers.reconcileControllerCommand),
  "controller.delete": (rt, request) =>
    withReceipt(rt, request, controllers.deleteControllerCommand),
  "controller.bind": (rt, request) => withReceipt(rt, request, controllers.bindControllerCommand),
  "controller.unbind": (rt, request) =>
    withReceipt(rt, request, controllers.unbindControllerCommand),
  "schedule.add": (rt, request) => withReceipt(rt, request, schedules.addScheduleCommand),
  "schedule.apply": (rt, request) => withReceipt(rt, request, schedules.applyScheduleCommand),
  "schedule.list": schedules.scheduleListQuery,
  "schedule.show": schedules.scheduleShowQuery,
  "schedule.pause": (rt, request) => withReceipt(rt, request, schedules.pauseScheduleCommand),
  "schedule.resume": (rt, request) => withReceipt(rt, request, schedules.resumeScheduleCommand),
  "schedule.remove": (rt, request) => withReceipt(rt, request, schedules.removeScheduleCommand),
  "host.status": (rt, request) =>
    receiptResponse({ ...request, operation: "host.status" }, rt.epoch, hostStatus(rt)),
  "host.prune": (rt, request) => withReceipt(rt, request, pruneCommand),
  "host.stop": (rt, request) => {
    // Not a durable change, so no receipt: a retry after the host stopped finds no host.
    rt.requestStop("host.stop");
    return receiptResponse({ ...request, operation: "host.stop" }, rt.epoch, { stopping: true });
  },
};

/**
 * The socket server's `handle`: never throws, every failure becomes a response. Reads answer
 * synchronously (no promise round on the hot path); commands that wait return a promise.
 */
export function createCommandHandler(
  rt: HostRuntime,
): (value: unknown) => HandledFrame | Promise<HandledFrame> {
  return (value) => {
    // The plain run.status of pollers by hand first; the schemas check everything else.
    const plain = fastPlainRunStatus(value);
    const parsed = plain ? { ok: true as const, request: plain } : parseHostRequest(value);
    if (!parsed.ok) {
      return {
        close: true,
        response: failureResponse({
          requestId: parsed.requestId ?? null,
          hostEpoch: rt.epoch,
          outcome: "rejected",
          code: parsed.code,
          message: `Request rejected: ${parsed.error}`,
        }),
      };
    }
    const request = parsed.request;
    const failed = (error: unknown): HandledFrame => ({
      close: false,
      response: errorResponse(rt, request, error),
    });
    try {
      const response = dispatch(rt, request);
      if (!(response instanceof Promise)) return { close: false, response };
      return response.then((answer) => ({ close: false, response: answer }), failed);
    } catch (error) {
      return failed(error);
    }
  };
}

function dispatch(rt: HostRuntime, request: HostRequest): HostResponse | Promise<HostResponse> {
  const fail = (
    outcome: "rejected" | "unavailable",
    code: string,
    message: string,
  ): HostResponse =>
    failureResponse({ requestId: request.requestId, hostEpoch: rt.epoch, outcome, code, message });
  if (request.hostEpoch !== undefined && request.hostEpoch !== rt.epoch) {
    return fail(
      "rejected",
      HOST_ERROR_CODES.staleEpoch,
      `Request rejected: it names host epoch ${request.hostEpoch}, the host now holds epoch ${rt.epoch}; read the state again and retry`,
    );
  }
  // A stopping host still tells what it is doing; every other command waits for the next host.
  const stoppingStatus = request.operation === "host.status" && rt.phase() === "stopping";
  if (!stoppingStatus && (rt.phase() !== "running" || !rt.holdsEpoch())) {
    return fail(
      "unavailable",
      HOST_ERROR_CODES.hostStopping,
      "Host unavailable: the host is stopping; retry and a new host will start",
    );
  }
  const handler = SERVED_OPERATIONS.has(request.operation)
    ? HANDLERS[request.operation]
    : undefined;
  if (!handler) {
    return fail(
      "rejected",
      HOST_ERROR_CODES.notAvailable,
      `Operation ${request.operation} is not available yet in this host`,
    );
  }
  return handler(rt, request);
}

/** The answer to a connection over the host's limit; the connection closes after it. */
export function hostBusyResponse(hostEpoch: number, maxConnections: number): HostResponse {
  return failureResponse({
    requestId: null,
    hostEpoch,
    outcome: "unavailable",
    code: HOST_ERROR_CODES.hostBusy,
    message:
      `Host busy: it serves its limit of ${maxConnections} connections at once; retry shortly`,
  });
}

/** The answer to a frame that could not be decoded; the connection closes after it. */
export function frameRejectedResponse(hostEpoch: number, error: FrameError): HostResponse {
  return failureResponse({
    requestId: null,
    hostEpoch,
    outcome: "rejected",
    code: error.code,
    message: `Request rejected: ${error.message}`,
  });
}

/** Sent instead of a response that cannot be encoded (larger than a frame). */
export function responseFailedResponse(
  hostEpoch: number,
  response: unknown,
  error: Error,
): HostResponse {
  const requestId = (response as { requestId?: string | null })?.requestId ?? null;
  return failureResponse({
    requestId,
    hostEpoch,
    outcome: "rejected",
    code: "responseTooLarge",
    message: `Response not sent: ${error.message}; ask for less (a smaller limit)`,
  });
}

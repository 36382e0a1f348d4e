/**
 * `run.pause`, `run.resume` and `run.cancel`. Each commits its transition with the command
 * receipt in one transaction (releasing the exact claim), answers only after that commit, and
 * then has the supervision stop the fenced worker group (pause, cancel) or schedule (resume).
 */
import type { HostRequest } from "../protocol/host-request.ts";
import { type HostResponse, successResponse } from "../protocol/host-response.ts";
import { NotFoundError, RevisionConflictError } from "../state/errors.ts";
import type { CommandReceiptInput } from "../state/host-commands.ts";
import { readRun } from "../state/queries.ts";
import {
  cancelRun,
  type CommandResult,
  pauseRun,
  resumeRun,
  type RunCommandOptions,
} from "../state/transitions/run-commands.ts";
import type { HostRuntime } from "./host-runtime.ts";
import type { RunSummary } from "../protocol/run-operations.ts";
import { runReceipt, runSummary } from "./run-summary.ts";

type Action = "pause" | "resume" | "cancel";

const TRANSITIONS: Record<Action, (store: HostRuntime["store"], opts: RunCommandOptions) => CommandResult> = {
  pause: pauseRun,
  resume: resumeRun,
  cancel: cancelRun,
};

async function controlRun(
  action: Action,
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
): Promise<HostResponse> {
  const runId = request.runId!;
  const before = readRun(rt.store, runId);
  if (!before) throw new NotFoundError("run", runId);
  if (request.expectedRevision !== undefined && request.expectedRevision !== before.revision) {
    throw new RevisionConflictError(runId, request.expectedRevision, before.revision);
  }
  const now = rt.clock.now();
  const body = runReceipt(expectedAfter(action, runSummary(before), now));
  const result = TRANSITIONS[action](rt.store, {
    runId,
    ownerId: rt.ownerId,
    receipt: { ...receipt, receipt: body },
  });
  rt.log(`run.${action}`, { runId, revision: result.revision, stopWorker: result.stopWorker });
  if (result.stopWorker && action !== "resume") {
    await rt.supervision.stopRun(runId, action === "pause" ? "paused" : "cancelled");
  }
  if (action === "resume") rt.supervision.wake();
  return successResponse({
    requestId: request.requestId,
    hostEpoch: rt.epoch,
    revision: result.revision,
    receipt: body,
  });
}

/** The run as the transition leaves it (the same rules as src/state/transitions/run-commands.ts). */
function expectedAfter(action: Action, run: RunSummary, now: number): RunSummary {
  const after: RunSummary = { ...run, revision: run.revision + 1, updatedAt: now };
  const live = run.state === "running" && run.queueState !== "parked";
  switch (action) {
    case "pause":
      return { ...after, paused: true, queueState: live ? "parked" : run.queueState };
    case "resume": {
      const { blockedReason: _, ...rest } = after as RunSummary & { blockedReason?: string };
      return { ...rest, paused: false };
    }
    case "cancel":
      return {
        ...after,
        state: "cancelled",
        queueState: "cancelled",
        paused: false,
        error: { code: "cancelled", message: "The run was cancelled" },
      };
  }
}

export const pauseRunCommand = (rt: HostRuntime, request: HostRequest, receipt: CommandReceiptInput) =>
  controlRun("pause", rt, request, receipt);
export const resumeRunCommand = (rt: HostRuntime, request: HostRequest, receipt: CommandReceiptInput) =>
  controlRun("resume", rt, request, receipt);
export const cancelRunCommand = (rt: HostRuntime, request: HostRequest, receipt: CommandReceiptInput) =>
  controlRun("cancel", rt, request, receipt);

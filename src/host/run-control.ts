/**
 * `run.pause`, `run.resume` and `run.cancel`. Each commits its transition with the command
 * receipt in one transaction (checking `expectedRevision` and releasing the exact claim there),
 * answers only after that commit, and then has the supervision stop the fenced worker group
 * (pause, cancel) or schedule the run again (resume).
 */
import type { HostRequest } from "../protocol/host-request.ts";
import { type HostResponse, receiptResponse } from "../protocol/host-response.ts";
import type { CommandReceiptInput } from "../state/host-commands.ts";
import type { StateStore } from "../state/store.ts";
import {
  type AcceptedSource,
  cancelRun,
  type CommandResult,
  pauseRun,
  resumeRun,
  type RunCommandOptions,
} from "../state/transitions/run-commands.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { committedRunReceipt } from "./run-summary.ts";
import { currentSourceOf, refuseStillChangedSource } from "./accept-source.ts";

type Action = "pause" | "resume" | "cancel";

const TRANSITIONS: Record<Action, (store: StateStore, opts: RunCommandOptions) => CommandResult> = {
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
  let acceptSource: AcceptedSource | undefined;
  if (request.operation === "run.resume" && request.payload.acceptSource) {
    const current = await currentSourceOf(rt, request);
    if (!current.ok) return current.response;
    acceptSource = current.accepted;
  } else if (request.operation === "run.resume") {
    const refused = refuseStillChangedSource(rt, request);
    if (refused) return refused;
  }
  // Before the transition: the scheduler the resume wakes finds them held.
  if (request.operation === "run.resume") {
    rt.supervision.supplyCredentials(runId, request.payload.credentials ?? {});
  }
  const committed = committedRunReceipt(rt.store);
  const options: RunCommandOptions = {
    runId,
    claim: rt.supervision.claimOf(runId),
    expectedRevision: request.expectedRevision,
    receipt: { ...receipt, receipt: committed.receipt },
  };
  const result = acceptSource
    ? resumeRun(rt.store, { ...options, acceptSource })
    : TRANSITIONS[action](rt.store, options);
  rt.log(`run.${action}`, { runId, revision: result.revision, stopWorker: result.stopWorker });
  // A cancel also stops a waiting run's validation child, which has no worker to stop.
  if ((result.stopWorker && action !== "resume") || action === "cancel") {
    await rt.supervision.stopRun(runId, action === "pause" ? "paused" : "cancelled");
  }
  // Resume: launchable again. Cancel: a controller whose child this was is due.
  if (action !== "pause") rt.supervision.wake();
  return receiptResponse(request, rt.epoch, committed.body(), { revision: result.revision });
}

type Command = (
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
) => Promise<HostResponse>;

export const pauseRunCommand: Command = (rt, request, receipt) =>
  controlRun("pause", rt, request, receipt);
export const resumeRunCommand: Command = (rt, request, receipt) =>
  controlRun("resume", rt, request, receipt);
export const cancelRunCommand: Command = (rt, request, receipt) =>
  controlRun("cancel", rt, request, receipt);

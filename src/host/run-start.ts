/**
 * `run.start`: the workflow reference and input are checked by a supervised source-resolver
 * child (the host never loads workflow code), then the run is enqueued together with its
 * command receipt in one transaction, and the scheduler is woken.
 */
import { realpathSync } from "node:fs";
import type { HostRequest } from "../protocol/host-request.ts";
import { failureResponse, type HostResponse, successResponse } from "../protocol/host-response.ts";
import type { RunSummary } from "../protocol/run-operations.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { CommandReceiptInput } from "../state/host-commands.ts";
import { enqueueRun } from "../state/transitions/run-enqueue.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { runReceipt } from "./run-summary.ts";

export async function startRunCommand(
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
): Promise<HostResponse> {
  if (request.operation !== "run.start") throw new TypeError("Expected run.start");
  const payload = request.payload;
  const reject = (code: string, message: string) =>
    failureResponse({
      requestId: request.requestId,
      hostEpoch: rt.epoch,
      outcome: "rejected",
      code,
      message,
    });
  let projectPath: string;
  try {
    projectPath = realpathSync(payload.cwd);
  } catch {
    return reject("invalidCwd", "Cannot start the run: the working directory does not exist");
  }
  const resolved = await rt.supervision.resolve({
    workflow: payload.workflow,
    input: payload.input ?? null,
    cwd: projectPath,
  });
  if (!resolved.ok) return reject(resolved.code, resolved.message);
  const runId = rt.ids.next("run");
  const now = rt.clock.now();
  // The receipt states the run exactly as this transaction creates it (revision 1, queued).
  const summary: RunSummary = {
    runId,
    workflowName: resolved.workflowName,
    title: resolved.title,
    state: "queued",
    queueState: "queued",
    paused: false,
    revision: 1,
    executionMode: payload.executionMode,
    createdAt: now,
    updatedAt: now,
  };
  const body = runReceipt(summary);
  const result = enqueueRun(rt.store, {
    runId,
    workflowName: resolved.workflowName,
    workflowRef: payload.workflow,
    title: resolved.title,
    projectPath,
    workflowSource: resolved.workflowSource as JsonValue,
    definitionDigest: resolved.definitionDigest,
    input: resolved.input as JsonValue,
    inputHash: resolved.inputHash,
    binding: {
      executionMode: payload.executionMode,
      originSessionId: payload.originSessionId ?? null,
    },
    receipt: { ...receipt, receipt: body },
  });
  rt.log("run.queued", { runId, revision: result.revision });
  rt.supervision.wake();
  return successResponse({
    requestId: request.requestId,
    hostEpoch: rt.epoch,
    revision: result.revision,
    receipt: body,
  });
}

/**
 * `run.start`: the workflow reference and input are checked by a supervised source-resolver
 * child (the host never loads workflow code; run-launch.ts), then the run is enqueued together
 * with its command receipt in one transaction, and the scheduler is woken. Resolution is asynchronous,
 * so a slow resolver never holds up other clients.
 */
import { realpathSync } from "node:fs";
import type { HostRequest } from "../protocol/host-request.ts";
import { failureResponse, type HostResponse, receiptResponse } from "../protocol/host-response.ts";
import { tighterBudget } from "../protocol/budget.ts";
import type { CommandReceiptInput } from "../state/host-commands.ts";
import { enqueueRun } from "../state/transitions/run-enqueue.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { committedRunReceipt } from "./run-summary.ts";
import { prepareRunLaunch, runLaunched } from "./run-launch.ts";
import { resolvedRunFields } from "./resolved-run.ts";

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
  // The client defines the run's environment; it is recorded with the run for every relaunch,
  // except credentials: those the host holds in memory only (run-launch.ts).
  const prepared = await prepareRunLaunch(rt, {
    workflow: payload.workflow,
    input: payload.input ?? null,
    cwd: projectPath,
    env: payload.env,
    credentials: payload.credentials,
    executionMode: payload.executionMode,
    // Agent steps of a headless run need the Pi the client found (it records it with the run).
    pi: payload.pi ?? null,
    command: (name) => `start "${name}"`,
    interactiveHint: "start it from Pi",
  });
  if (!prepared.ok) return reject(prepared.code, prepared.message);
  const { resolved, environment, credentials, runSecretNames } = prepared;
  const committed = committedRunReceipt(rt.store);
  const fields = resolvedRunFields(resolved, projectPath);
  const result = enqueueRun(rt.store, {
    ...fields,
    // The start's own limits win when smaller than the workflow's.
    budget: tighterBudget(fields.budget, payload.budget),
    definition: resolved.definition,
    binding: {
      executionMode: payload.executionMode,
      originSessionId: payload.originSessionId ?? null,
      pi: payload.pi ?? null,
    },
    environment,
    credentialNames: Object.keys(credentials),
    runSecretNames,
    receipt: { ...receipt, receipt: committed.receipt },
  });
  runLaunched(rt, "run.queued", result, credentials);
  return receiptResponse(request, rt.epoch, committed.body(), { revision: result.revision });
}

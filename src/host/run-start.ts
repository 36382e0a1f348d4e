/**
 * `run.start`: the workflow reference and input are checked by a supervised source-resolver
 * child (the host never loads workflow code), then the run is enqueued together with its
 * command receipt in one transaction, and the scheduler is woken. Resolution is asynchronous,
 * so a slow resolver never holds up other clients.
 */
import { realpathSync } from "node:fs";
import type { HostRequest } from "../protocol/host-request.ts";
import { failureResponse, type HostResponse, successResponse } from "../protocol/host-response.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { tighterBudget } from "../protocol/budget.ts";
import { baseRunEnvironment } from "../protocol/run-environment.ts";
import { splitCredentials } from "../protocol/credential-names.ts";
import type { CommandReceiptInput } from "../state/host-commands.ts";
import { enqueueRun } from "../state/transitions/run-enqueue.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { committedRunReceipt } from "./run-summary.ts";
import { resolvedRunFields } from "../workflows/sources/resolved-run.ts";

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
  // The client defines the run's environment; a client that sends none gets the allowlisted
  // base of the host's own (never the rest of it). Recorded with the run for every relaunch,
  // except credentials: those the host holds in memory only, for the run's Pi children.
  const split = splitCredentials(payload.env ?? baseRunEnvironment(process.env));
  const environment = split.env;
  // An explicit `--env` wins over a key the client picked up from its environment.
  const credentials = { ...payload.credentials, ...split.credentials };
  const resolved = await rt.supervision.resolve({
    workflow: payload.workflow,
    input: payload.input ?? null,
    cwd: projectPath,
    env: environment,
  });
  if (!resolved.ok) return reject(resolved.code, resolved.message);
  // A headless run has no origin Pi session to show an assistant message in: refuse it now
  // rather than let it fail at that step after earlier steps ran.
  if (payload.executionMode === "headless" && resolved.needsInteractive) {
    return reject(
      "needsOriginSession",
      `Cannot start "${resolved.workflowName}" headless: it has an assistant-message step, which needs an origin Pi session (start it from Pi)`,
    );
  }
  // Agent steps of a headless run need the Pi the client found (it records it with the run).
  if (payload.executionMode === "headless" && resolved.needsAgent && !payload.pi) {
    return reject(
      "piUnavailable",
      `Cannot start "${resolved.workflowName}" headless: it has agent steps and no Pi command was found to run them`,
    );
  }
  const committed = committedRunReceipt(rt.store);
  const fields = resolvedRunFields(resolved, payload.workflow, projectPath);
  const result = enqueueRun(rt.store, {
    ...fields,
    // The start's own limits win when smaller than the workflow's.
    budget: tighterBudget(fields.budget, payload.budget),
    definition: resolved.definition as JsonValue,
    binding: {
      executionMode: payload.executionMode,
      originSessionId: payload.originSessionId ?? null,
      pi: payload.pi ?? null,
    },
    environment,
    credentialNames: Object.keys(credentials),
    // Named with `--env`: meant for the run, so its workers and nodes get them too.
    runSecretNames: Object.keys(split.credentials),
    receipt: { ...receipt, receipt: committed.receipt },
  });
  rt.supervision.supplyCredentials(result.runId, credentials);
  rt.log("run.queued", { runId: result.runId, revision: result.revision });
  rt.supervision.wake();
  return successResponse({
    requestId: request.requestId,
    hostEpoch: rt.epoch,
    revision: result.revision,
    receipt: committed.body(),
  });
}

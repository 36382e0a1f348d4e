/**
 * `run.rerun` (and its `retry` form): fork a run at one of its node visits. The host reads the
 * parent, asks a supervised resolver child about the workflow file as it is now (the host never
 * loads workflow code; run-launch.ts), picks the source, and commits the fork with its adopted history and the
 * command receipt in one transaction (state/transitions/run-fork.ts), then wakes the scheduler.
 */
import type { HostRequest } from "../protocol/host-request.ts";
import type { OperationReceipt } from "../protocol/host-operations.ts";
import {
  failureResponse,
  type HostResponse,
  receiptJson,
  receiptResponse,
} from "../protocol/host-response.ts";
import { canonicalJson } from "../protocol/canonical-json.ts";
import type { RerunSource } from "../protocol/rerun-operations.ts";
import type { CommandReceiptInput } from "../state/host-commands.ts";
import { readRunOrigin, type RunOrigin } from "../state/fork-queries.ts";
import { NotFoundError, RefusedError } from "../state/errors.ts";
import {
  defaultForkNode,
  findForkStart,
  forkRun,
  type ForkRunResult,
  parentAttempts,
  retryForkNode,
} from "../state/transitions/run-fork.ts";
import { readRun } from "../state/queries.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { runReceipt, runSummary } from "./run-summary.ts";
import { prepareRunLaunch, runLaunched } from "./run-launch.ts";
import { resolvedRunFields } from "./resolved-run.ts";

export async function rerunRunCommand(
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
): Promise<HostResponse> {
  if (request.operation !== "run.rerun") throw new TypeError("Expected run.rerun");
  const payload = request.payload;
  const parentRunId = request.runId!;
  const reject = (code: string, message: string) =>
    failureResponse({
      requestId: request.requestId,
      hostEpoch: rt.epoch,
      outcome: "rejected",
      code,
      message,
    });
  const parent = readRunOrigin(rt.store, parentRunId);
  if (!parent) throw new NotFoundError("run", parentRunId);
  const attempts = parentAttempts(rt.store, parentRunId);
  const from = payload.retry ? retryNode(parent, attempts) : payload.from ??
    defaultForkNode(parent, attempts) ?? noDefaultNode(parentRunId, attempts);
  // Checked now so a typo is answered before a resolver child starts; the transaction checks again.
  findForkStart(parentRunId, attempts, from, payload.visit);
  if (parent.executionMode === "interactive" && !payload.originSessionId) {
    return reject(
      "needsOriginSession",
      `Run ${parentRunId} is interactive: rerun it from a Pi session (/workflow rerun ${parentRunId}), where the new run will ask its steps`,
    );
  }
  // The fork keeps the parent's execution mode; a headless one the parent's Pi unless given one.
  const pi = payload.pi ?? parent.pi;
  const prepared = await prepareRunLaunch(rt, {
    workflow: parent.workflowRef,
    input: payload.input ?? parent.input,
    cwd: parent.projectPath,
    env: payload.env,
    credentials: payload.credentials,
    executionMode: parent.executionMode,
    pi,
    command: () => `rerun ${parentRunId}`,
    unresolved: (message) =>
      `Cannot rerun ${parentRunId}: the workflow file does not load as it is now: ${message}`,
    interactiveHint: "restore the workflow file, or start the workflow from Pi",
  });
  if (!prepared.ok) return reject(prepared.code, prepared.message);
  const { resolved, environment, credentials, runSecretNames } = prepared;
  const changed = canonicalJson(resolved.workflowSource) !== parent.workflowSourceText;
  const source: RerunSource = payload.retry ? "current" : payload.source ??
    (changed ? "current" : "recorded");
  if (source === "recorded" && changed) {
    return reject(
      "workflowSourceChanged",
      `Cannot rerun ${parentRunId} on its recorded source: the workflow file changed since it started. Rerun on the file as it is now (--source current) or restore the file`,
    );
  }
  const fields = resolvedRunFields(resolved, parent.projectPath);
  let body: OperationReceipt<"run.rerun"> | null = null;
  const result = forkRun(rt.store, {
    ...fields,
    // The parent's input exactly as recorded, unless a new one was given.
    ...(payload.input === undefined ? { input: parent.input, inputHash: parent.inputHash } : {}),
    definition: resolved.definition,
    binding: {
      executionMode: parent.executionMode,
      // A headless fork has no origin session, even when a Pi session asked for it.
      originSessionId: parent.executionMode === "interactive" ? payload.originSessionId! : null,
      pi: parent.executionMode === "headless" ? pi : null,
    },
    environment,
    credentialNames: Object.keys(credentials),
    runSecretNames,
    parentRunId,
    fromNodeId: from,
    ...(payload.visit !== undefined ? { visit: payload.visit } : {}),
    source,
    graph: resolved.definition,
    receipt: {
      ...receipt,
      receipt: (target) => receiptJson(body = rerunReceipt(rt, target.result as ForkRunResult)),
    },
  });
  runLaunched(rt, "run.forked", result, credentials);
  return receiptResponse(request, rt.epoch, body ?? rerunReceipt(rt, result), {
    revision: result.revision,
  });
}

/** The receipt body: the fork as committed, where it reran from, what it adopted. */
function rerunReceipt(rt: HostRuntime, fork: ForkRunResult): OperationReceipt<"run.rerun"> {
  const view = readRun(rt.store, fork.runId);
  if (!view) throw new Error("Command receipt failed: the fork is missing after its commit");
  return {
    ...runReceipt(runSummary(view)),
    from: { runId: view.forkedFrom!.runId, ...fork.from },
    adoptedAttempts: fork.adopted.length,
    source: fork.source,
  };
}

/** `retry`: the node a failed or timed-out run failed in. */
function retryNode(parent: RunOrigin, attempts: ReturnType<typeof parentAttempts>): string {
  if (parent.state !== "failed" && parent.state !== "timed_out") {
    throw new RefusedError(
      "rejected",
      "notRetryable",
      `Run ${parent.runId} is ${parent.state}: only a failed or timed-out run is retried; use 'pi-workflows rerun ${parent.runId} --from <node>'`,
    );
  }
  const node = retryForkNode(attempts);
  if (node === undefined) {
    throw new RefusedError(
      "rejected",
      "notRetryable",
      `Run ${parent.runId} did not fail in a node (it failed routing or its own limits); use 'pi-workflows rerun ${parent.runId} --from <node>'`,
    );
  }
  return node;
}

function noDefaultNode(runId: string, attempts: ReturnType<typeof parentAttempts>): never {
  const seen = [...new Set(attempts.map((a) => a.nodeId))];
  throw new RefusedError(
    "rejected",
    "fromRequired",
    `Run ${runId} did not stop at a node: name the node to rerun with --from (it ran: ${
      seen.length > 0 ? seen.join(", ") : "none"
    })`,
  );
}

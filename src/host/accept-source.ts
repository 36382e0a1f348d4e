/**
 * `run.resume` with `acceptSource`: a run parked `workflowSourceChanged` is re-pinned to the
 * workflow file as it is now. A resolver child reads the file (the host never loads workflow
 * code); the state layer checks the run's history against the new graph and commits the re-pin,
 * the resume and the receipt in one transaction (state/transitions/source-accept.ts).
 */
import type { HostRequest } from "../protocol/host-request.ts";
import { failureResponse, type HostResponse } from "../protocol/host-response.ts";
import { baseRunEnvironment } from "../protocol/run-environment.ts";
import { readRunOrigin } from "../state/fork-queries.ts";
import { NotFoundError } from "../state/errors.ts";
import { readRunEnvironment } from "../state/run-environments.ts";
import { readRun } from "../state/queries.ts";
import { verifySourceIdentity, type WorkflowSource } from "../workflows/sources/identity.ts";
import type { AcceptedSource } from "../state/transitions/run-commands.ts";
import type { HostRuntime } from "./host-runtime.ts";

/** The resolved current source of a parked run, or the response that refuses it. */
export async function currentSourceOf(
  rt: HostRuntime,
  request: HostRequest,
): Promise<{ ok: true; accepted: AcceptedSource } | { ok: false; response: HostResponse }> {
  if (request.operation !== "run.resume") throw new TypeError("Expected run.resume");
  const runId = request.runId!;
  const origin = readRunOrigin(rt.store, runId);
  if (!origin) throw new NotFoundError("run", runId);
  const resolved = await rt.supervision.resolve({
    workflow: origin.workflowRef,
    input: origin.input,
    cwd: origin.projectPath,
    env: readRunEnvironment(rt.store, runId) ?? baseRunEnvironment(process.env),
  });
  if (!resolved.ok) {
    return {
      ok: false,
      response: failureResponse({
        requestId: request.requestId,
        hostEpoch: rt.epoch,
        outcome: "rejected",
        code: resolved.code,
        message:
          `Cannot accept the workflow source of ${runId}: the file does not load as it is now: ${resolved.message}`,
      }),
    };
  }
  return {
    ok: true,
    accepted: {
      workflowSource: resolved.workflowSource,
      definitionDigest: resolved.definitionDigest,
      definition: resolved.definition,
      operator: request.payload.operator ?? "unknown",
      clientId: request.clientId,
    },
  };
}

/**
 * A plain `run.resume` of a run parked `workflowSourceChanged` whose files still differ from the
 * recorded ones (hashed, never loaded) is refused, naming both ways on: resumed, it would only
 * launch a worker that parks it again at once, while the answer said it was running.
 */
export function refuseStillChangedSource(
  rt: HostRuntime,
  request: HostRequest,
): HostResponse | null {
  const runId = request.runId!;
  if (readRun(rt.store, runId)?.blockedReason !== "workflowSourceChanged") return null;
  const source = readRunOrigin(rt.store, runId)?.workflowSource as WorkflowSource | undefined;
  const check = source ? verifySourceIdentity(source) : null;
  if (!check || check.ok) return null;
  const first = check.changed[0]!;
  const more = check.changed.length > 1 ? ` and ${check.changed.length - 1} more` : "";
  return failureResponse({
    requestId: request.requestId,
    hostEpoch: rt.epoch,
    outcome: "rejected",
    code: "workflowSourceChanged",
    message: `Resume refused: ${first.source} is still ${first.reason}${more} since run ${runId} ` +
      "started; restore it and resume, or go on with it as it is now: " +
      `'pi-workflows resume ${runId} --accept-source'`,
  });
}

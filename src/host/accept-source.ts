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
import {
  type SourceChange,
  verifySourceIdentity,
  type WorkflowSource,
} from "../workflows/sources/identity.ts";
import { goneIncludes, sourceChangeWords, sourceWayOn } from "../base/source-change-text.ts";
import type { StateStore } from "../state/store.ts";
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

/** Hashed, never loaded: which files of the run differ from the ones it started with. */
export function readSourceChanges(store: StateStore, runId: string): SourceChange[] {
  const source = readRunOrigin(store, runId)?.workflowSource as WorkflowSource | undefined;
  const check = source ? verifySourceIdentity(source) : null;
  return check && !check.ok ? check.changed : [];
}

/**
 * A plain `run.resume` of a run parked `workflowSourceChanged` whose files still differ from the
 * recorded ones is refused, naming the ways on: resumed, it would only launch a worker that parks
 * it again at once, while the answer said it was running.
 */
export function refuseStillChangedSource(
  rt: HostRuntime,
  request: HostRequest,
): HostResponse | null {
  const runId = request.runId!;
  if (readRun(rt.store, runId)?.blockedReason !== "workflowSourceChanged") return null;
  const changes = readSourceChanges(rt.store, runId);
  if (changes.length === 0) return null;
  return failureResponse({
    requestId: request.requestId,
    hostEpoch: rt.epoch,
    outcome: "rejected",
    code: "workflowSourceChanged",
    message: stillChangedMessage(runId, changes),
  });
}

/** The refusal in words: what changed, and only the ways on that can work. */
export function stillChangedMessage(runId: string, changes: readonly SourceChange[]): string {
  const first = changes[0]!;
  const more = changes.length > 1 ? ` (and ${changes.length - 1} more)` : "";
  const accept = `'pi-workflows resume ${runId} --accept-source'`;
  const way = sourceWayOn(changes);
  return `Resume refused: ${sourceChangeWords(first)}${more} since run ${runId} started; ` +
    (way === "rootGone"
      // Nothing to accept either: this host cannot load a built-in it does not have.
      ? `the run cannot go on in this version: 'pi-workflows cancel ${runId}', or resume it ` +
        "under a version that has its built-in"
      // Its workflow file includes a built-in this version lacks: it does not load as it is.
      : way === "includeGone"
      ? `this version has no ${goneIncludes(changes)}: remove its include from the workflow ` +
        `file, then ${accept}; or resume under a version that has it; or ` +
        `'pi-workflows cancel ${runId}'`
      : way === "builtin"
      ? `a built-in workflow cannot be restored, go on with this version's: ${accept}`
      : `restore it and resume, or go on with it as it is now: ${accept}`);
}

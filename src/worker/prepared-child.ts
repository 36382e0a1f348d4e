/**
 * A run process the host kept after its epoch parked on an interactive request (the host's
 * prepared-children.ts). It holds no claim and proposes nothing on its own: it waits for the
 * host's next frame and
 *
 *   a validate request -> checks that submission with the workflow it has loaded (the saved
 *                         source is hashed again first: changed code is never used) and proposes
 *                         one verdict under the request's own launch header, then waits again;
 *   a launch envelope  -> is returned: the process runs that epoch (a new claim generation,
 *                         fenced like any worker) with the workflow already loaded.
 *
 * Anything for another run or source is refused (the process exits; the host starts fresh
 * children). The host ends it by closing the channel or SIGTERM (main.ts), when it waited too
 * long, its run ended, or the host stops.
 */
import { parseValidateRequest, VALIDATE_REQUEST_SCHEMA } from "../protocol/validate-messages.ts";
import type { WorkerChannel } from "./channel.ts";
import { parseLaunch, type WorkerLaunch } from "./launch.ts";
import { answerValidation } from "./validate-submission.ts";
import type { RunWorkflow } from "./workflow-port.ts";

/** The workflow a process loaded for its run, and the launch it was loaded under. */
export interface LoadedRun {
  launch: WorkerLaunch;
  workflow: RunWorkflow;
}

/** Serves validations until the host sends the next epoch's launch envelope; returns it. */
export async function servePrepared(
  channel: WorkerChannel,
  nextPush: () => Promise<unknown>,
  loaded: LoadedRun,
): Promise<WorkerLaunch> {
  for (;;) {
    const frame = await nextPush();
    if ((frame as { schema?: unknown } | null)?.schema !== VALIDATE_REQUEST_SCHEMA) {
      const launch = parseLaunch(frame);
      refuseOther(loaded, launch);
      return launch;
    }
    const parsed = parseValidateRequest(frame);
    if (!parsed.ok) throw new Error(`Validation request rejected: ${parsed.error}`);
    refuseOther(loaded, parsed.value.launch);
    const port = await import("./workflow-port.ts");
    await answerValidation(channel, parsed.value, (request) => {
      const problem = port.checkSourceBeforeLoad(request.launch);
      return Promise.resolve(
        problem === null
          ? { ok: true, workflow: loaded.workflow.forLaunch(request.launch) }
          : { ok: false, detail: problem.detail },
      );
    });
  }
}

/** Whether `launch` names the run and the saved source this process loaded. */
export function sameRunSource(loaded: WorkerLaunch, launch: WorkerLaunch): boolean {
  return loaded.runId === launch.runId && loaded.projectPath === launch.projectPath &&
    loaded.definitionDigest === launch.definitionDigest &&
    loaded.executionMode === launch.executionMode &&
    JSON.stringify(loaded.workflowSource) === JSON.stringify(launch.workflowSource);
}

function refuseOther(loaded: LoadedRun, launch: WorkerLaunch): void {
  if (!sameRunSource(loaded.launch, launch)) {
    throw new Error("Prepared worker refused a job: it names another run or source");
  }
}

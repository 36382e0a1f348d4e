/**
 * A run process the host kept after its epoch parked on an interactive request (the host's
 * prepared-children.ts). It holds no claim and proposes nothing on its own: it waits for the
 * host's next frame and
 *
 *   a validate request -> checks that submission with a fresh instance of the run's workflow (the
 *                         saved source is hashed again first: changed code is never used) and
 *                         proposes one verdict under the request's own launch header, then waits
 *                         again;
 *   a launch envelope  -> is returned: the process runs that epoch (a new claim generation,
 *                         fenced like any worker) in another fresh instance.
 *
 * Every generation and validation runs in a module instance of its own, loaded ahead while the
 * process waits (fresh-instances.ts): module state in workflow code never crosses from one to the
 * next, as between the separate processes the spec describes.
 *
 * Anything for another run or source is refused (the process exits; the host starts fresh
 * children). The host ends it by closing the channel or SIGTERM (main.ts), when it waited too
 * long, its run ended, or the host stops.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { RunFacts } from "../protocol/run-facts.ts";
import {
  parseValidateRequest,
  VALIDATE_REQUEST_SCHEMA,
  type ValidateRequest,
} from "../protocol/validate-messages.ts";
import type { WorkerChannel } from "./channel.ts";
import { readPositiveIntegerEnv } from "../os/env-integer.ts";
import { createFreshInstances, type FreshInstances, MAX_FRESH_LOADS } from "./fresh-instances.ts";
import { parseLaunch, type WorkerLaunch } from "./launch.ts";
import { answerValidation } from "./validate-submission.ts";
import type { LoadOutcome } from "./workflow-port.ts";
// Types only: the module loads with this one, as the epoch that may be kept says goodbye.
import type { AheadEpoch } from "./speculative-step.ts";

/**
 * Modules imported when first used (not on a first epoch's start-up path), then kept: a cached
 * `import()` still costs ~20 us, three times on a validation's path.
 */
let portModule: typeof import("./workflow-port.ts") | undefined;
let speculativeStep: typeof import("./speculative-step.ts") | undefined;
const workflowPort = async () => portModule ??= await import("./workflow-port.ts");

/** A kept run process: the launch its run's source was checked under, and its fresh instances. */
export interface PreparedRun {
  launch: WorkerLaunch;
  instances: FreshInstances<LoadOutcome>;
  /** What the last acceptance proposed ahead for the epoch it launches (speculative-step.ts). */
  ahead: AheadEpoch | null;
}

export function prepareRun(launch: WorkerLaunch): PreparedRun {
  return {
    launch,
    instances: createFreshInstances(() => loadInstance(launch), maxLoads()),
    ahead: null,
  };
}

/**
 * `PI_WORKFLOWS_WORKER_MAX_LOADS` (a run sets it with `start --env`; tests lower it to see the
 * process retire): the loads one process makes before it asks not to be kept. A bad value keeps
 * the default and says so in the worker's log.
 */
export const MAX_LOADS_ENV = "PI_WORKFLOWS_WORKER_MAX_LOADS";

function maxLoads(): number {
  try {
    return readPositiveIntegerEnv(process.env, MAX_LOADS_ENV) ?? MAX_FRESH_LOADS;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}; using ${MAX_FRESH_LOADS}\n`);
    return MAX_FRESH_LOADS;
  }
}

/** Serves validations until the host sends the next epoch's launch envelope; returns it. */
export async function servePrepared(
  channel: WorkerChannel,
  nextPush: () => Promise<unknown>,
  prepared: PreparedRun,
): Promise<WorkerLaunch> {
  prepared.instances.fill();
  for (;;) {
    const frame = await nextPush();
    if ((frame as { schema?: unknown } | null)?.schema !== VALIDATE_REQUEST_SCHEMA) {
      const launch = parseLaunch(frame);
      refuseOther(prepared, launch);
      return launch;
    }
    const parsed = parseValidateRequest(frame);
    if (!parsed.ok) throw new Error(`Validation request rejected: ${parsed.error}`);
    refuseOther(prepared, parsed.value.launch);
    const port = await workflowPort();
    const request = parsed.value;
    prepared.ahead = null;
    const answered = await answerValidation(
      channel,
      request,
      async (request) => {
        const problem = port.checkSourceBeforeLoad(request.launch);
        if (problem !== null) return { ok: false, detail: problem.detail };
        const fresh = await takeFresh(prepared);
        return fresh.ok
          ? { ok: true, workflow: fresh.workflow.forLaunch(request.launch) }
          : { ok: false, detail: fresh.problem.detail };
      },
      request.next ? (facts, output) => proposeAhead(prepared, request, facts, output) : undefined,
    );
    // Set while the verdict was decided (proposeAhead).
    const ahead = prepared.ahead as AheadEpoch | null;
    if (ahead) ahead.committed = answered.aheadCommitted;
    // A rejected submission is followed by another one: load its instance meanwhile. After an
    // accepted one the next epoch comes (it says goodbye at once when its first step committed
    // ahead, and the pool fills again as that goodbye leaves, run-worker.ts: loading before it
    // would hold the goodbye, which a submission that follows at once waits for).
    if (!answered.accepted) prepared.instances.fill();
  }
}

/**
 * The epoch the request names, decided ahead in a fresh instance of its own: its first messages,
 * or null. The saved source is compared again first, as the epoch would: the workflow's
 * `validate` code ran since the validation's own check (up to VALIDATE_BOUND_MS), and a step
 * committed ahead skips the epoch's check, so an edit made meanwhile parks the run instead.
 */
async function proposeAhead(
  prepared: PreparedRun,
  request: ValidateRequest,
  facts: RunFacts,
  output: JsonValue,
): Promise<JsonValue[] | null> {
  const { aheadLaunch, firstStepAhead } = speculativeStep ??= await import("./speculative-step.ts");
  const launch = aheadLaunch(request as Parameters<typeof aheadLaunch>[0]);
  const instance = takeFresh(prepared);
  const ahead: AheadEpoch = {
    generation: launch.generation,
    workerEpoch: launch.workerEpoch,
    instance,
    sent: 0,
    committed: false,
  };
  prepared.ahead = ahead;
  const loaded = await instance;
  if (!loaded.ok || (await workflowPort()).checkSourceBeforeLoad(launch) !== null) return null;
  const messages = await firstStepAhead(loaded.workflow.forLaunch(launch), launch, facts, {
    attemptId: request.attemptId,
    output,
  });
  ahead.sent = messages?.length ?? 0;
  return messages;
}

/**
 * What was proposed ahead for `launch`'s generation, taken once (the epoch starts now); null when
 * nothing was, or for another generation.
 */
export function takeAhead(prepared: PreparedRun | null, launch: WorkerLaunch): AheadEpoch | null {
  const ahead = prepared?.ahead ?? null;
  if (prepared) prepared.ahead = null;
  if (ahead === null || ahead.generation !== launch.generation) return null;
  // Committed only under exactly this epoch (the host named it in the request).
  if (ahead.workerEpoch !== launch.workerEpoch) return { ...ahead, sent: 0, committed: false };
  return ahead;
}

/**
 * A fresh instance for a generation or a validation whose source check just passed. A spare
 * loaded while the source was changed (and restored since) is loaded again now.
 */
export async function takeFresh(prepared: PreparedRun): Promise<LoadOutcome> {
  const spare = await prepared.instances.take();
  return spare.ok ? spare : await prepared.instances.loadNow();
}

/** Whether `launch` names the run and the saved source this process loaded. */
export function sameRunSource(loaded: WorkerLaunch, launch: WorkerLaunch): boolean {
  return loaded.runId === launch.runId && loaded.projectPath === launch.projectPath &&
    loaded.definitionDigest === launch.definitionDigest &&
    loaded.executionMode === launch.executionMode &&
    JSON.stringify(loaded.workflowSource) === JSON.stringify(launch.workflowSource);
}

/** The saved hashes first (changed code is never imported), then a new load session. */
async function loadInstance(launch: WorkerLaunch): Promise<LoadOutcome> {
  const port = await workflowPort();
  const problem = port.checkSourceBeforeLoad(launch);
  if (problem !== null) return { ok: false, problem };
  return await port.loadRunWorkflow(launch);
}

function refuseOther(prepared: PreparedRun, launch: WorkerLaunch): void {
  if (!sameRunSource(prepared.launch, launch)) {
    throw new Error("Prepared worker refused a job: it names another run or source");
  }
}

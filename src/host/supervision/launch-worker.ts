/**
 * Launching one worker epoch: record the epoch and take the run claim (one transaction, before
 * any process exists), spawn `pi-workflows worker` in its own process group, then send the
 * launch envelope as the first frame. The envelope carries no claim secret (the host keeps the
 * claim); a headless run's provider credentials ride in it, outside the hashed part.
 */
import { logError } from "../host-log.ts";
import { fingerprint, type JsonValue } from "../../protocol/canonical-json.ts";
import { writeFrame } from "../../protocol/framing.ts";
import {
  WORKER_LAUNCH_SCHEMA,
  WORKER_PROTOCOL_VERSION,
  type WorkerLaunch,
} from "../../protocol/worker-launch.ts";
import {
  claimRunForLaunch,
  type LaunchableRun,
  markWorkerLive,
} from "../../state/transitions/run-launch.ts";
import type { HostContext } from "../host-context.ts";
import type { ActiveWorker } from "./active-worker.ts";
import { crashPoint } from "../../base/crash-point.ts";
import {
  type ChildCommand,
  nameChild,
  spawnChild,
  type SupervisedChild,
} from "./children/spawn-child.ts";
import { recordWorkerProcess } from "../../state/transitions/workers.ts";
import { afterGroupCommit } from "../../state/transactions.ts";
import { formatStartIdentity } from "../../os/process-identity.ts";
import type { ProcessRegistry } from "./process-registry.ts";
import type { Claim } from "../../state/claims.ts";
import type { LaunchSecrets } from "../run-credentials.ts";
import { recordedRunEnvironment } from "./children/child-environment.ts";
import { launchingLife } from "./worker-life.ts";

export interface LaunchHooks {
  /** A captured stream passed its cap: the rest never reached the file. */
  outputExceeded(worker: ActiveWorker, stream: "stdout" | "stderr"): void;
  /** Extra environment for the worker on top of the run's (tests); never secrets. */
  env?: NodeJS.ProcessEnv;
  /**
   * Provider credentials for the worker's Pi children and the secrets the user named for the
   * run (memory only, never hashed).
   */
  credentials?: LaunchSecrets;
  /** Overrides `selfCommand` (tests, benchmarks of a bundled entry). */
  command?: ChildCommand;
  /** A fresh worker enters it once identified (a prepared process is in it already). */
  registry: ProcessRegistry;
  /**
   * The run's prepared process (prepared-children.ts): the epoch runs there instead of in a new
   * process. Everything else (claim, epoch record, envelope, fencing) is the same.
   */
  prepared?: SupervisedChild | null;
  /**
   * A prepared process that just answered (accepted-launch.ts): its epoch is recorded `live` in
   * the claim's own group commit, so its `worker.ready` commits nothing.
   */
  live?: boolean;
  /** The epoch's id when the host chose it before the launch (named in a validate request). */
  workerEpoch?: string;
}

/**
 * The run is claimed for a launch, but its worker could not be spawned: what the exit path needs
 * to settle it, with the cause's code (an errno, else its name), never its text.
 */
export class WorkerSpawnError extends Error {
  readonly runId: string;
  readonly claim: Claim;
  readonly workerEpoch: string;
  readonly code: string = "Error";
  constructor(runId: string, claim: Claim, workerEpoch: string, cause: unknown) {
    super("Worker not started", { cause });
    this.name = "WorkerSpawnError";
    this.runId = runId;
    this.claim = claim;
    this.workerEpoch = workerEpoch;
    for (let c = cause; c instanceof Error; c = c.cause) {
      const errno = (c as NodeJS.ErrnoException).code;
      this.code = typeof errno === "string" ? errno : c.name;
      if (typeof errno === "string") break;
    }
  }
}

/**
 * The envelope minus its generation, which the claim decides; hashed into `run_workers`. A
 * validation child's launch header is the same (validation.ts).
 */
export function envelopeBase(
  run:
    & Pick<LaunchableRun, "runId" | "projectPath" | "definitionDigest" | "inputHash">
    & Pick<LaunchableRun, "workflowSource" | "executionMode">
    & Partial<Pick<LaunchableRun, "pi" | "piSession">>,
  workerEpoch: string,
) {
  return {
    schema: WORKER_LAUNCH_SCHEMA,
    runId: run.runId,
    workerEpoch,
    projectPath: run.projectPath,
    workflowSource: run.workflowSource as WorkerLaunch["workflowSource"],
    definitionDigest: run.definitionDigest,
    inputHash: run.inputHash,
    executionMode: run.executionMode,
    ...(run.pi ? { pi: run.pi } : {}),
    ...(run.piSession ? { piSession: run.piSession } : {}),
    protocolVersion: WORKER_PROTOCOL_VERSION,
  } as const;
}

/**
 * Claims and starts a worker for `run`. Returns the active record before the worker is ready;
 * the caller serves its channel and watches its exit. Throws when the claim cannot be taken
 * (another owner won the run): nothing was spawned then.
 */
export function launchWorker(
  ctx: HostContext,
  run: LaunchableRun,
  hooks: LaunchHooks,
): ActiveWorker {
  const workerEpoch = hooks.workerEpoch ?? ctx.ids.next("wep");
  const base = envelopeBase(run, workerEpoch);
  const prepared = hooks.prepared?.identity;
  const named = prepared
    ? { pid: prepared.pid, startIdentity: formatStartIdentity(prepared) }
    : null;
  const { claim, generation } = claimRunForLaunch(ctx.store, {
    runId: run.runId,
    ownerId: ctx.hostOwnerId,
    hostEpoch: ctx.hostEpoch,
    token: ctx.ids.token(),
    ttlMs: ctx.options.claimTtlMs,
    workerEpoch,
    launchEnvelopeHash: fingerprint(base as unknown as JsonValue),
    // A prepared process is named in the claim's own transaction.
    ...(named ? { process: named } : {}),
  });
  const live = hooks.live === true && named !== null;
  if (live) markWorkerLive(ctx.store, claim, { workerEpoch, ...named });
  crashPoint("host.launch.afterClaim");
  const envelope: WorkerLaunch = { ...base, generation, ...hooks.credentials };
  const worker = {} as ActiveWorker;
  let spawned: SupervisedChild;
  if (hooks.prepared) {
    spawned = hooks.prepared;
    spawned.onOutputExceeded = (stream) => hooks.outputExceeded(worker, stream);
  } else {
    try {
      spawned = spawnChild(ctx, {
        args: ["worker"],
        command: hooks.command,
        // The run's recorded environment, never the host's; the worker itself moves into the
        // run's project directory (a missing one blocks the run instead of failing the spawn).
        // The worker keeps its Pi children's output tails and the bridge under the state
        // directory.
        runEnvironment: recordedRunEnvironment(ctx.store, run.runId),
        extraEnv: { ...hooks.env, PI_WORKFLOWS_STATE_DIR: ctx.stateDir },
        logStem: workerEpoch,
        onOutputExceeded: (stream) => hooks.outputExceeded(worker, stream),
        register: { registry: hooks.registry, kind: "worker", runId: run.runId },
      });
    } catch (error) {
      // The claim is ours but no process exists: the caller settles the run now instead of
      // leaving it starting until the claim expires.
      throw new WorkerSpawnError(run.runId, claim, workerEpoch, error);
    }
  }
  // The envelope first: the worker waits for it while the host reads its start identity and
  // records it (`named`). Inside a group commit (accepted-launch.ts) only once that
  // COMMIT is durable.
  afterGroupCommit(ctx.store, () => {
    writeFrame(spawned.channel, envelope).catch(() => {
      // The child died before reading: its exit is handled as a crash.
    });
  });
  Object.assign(
    worker,
    {
      runId: run.runId,
      workerEpoch,
      generation,
      claim,
      spawned,
      named: hooks.prepared ? Promise.resolve() : nameChild(spawned, (process) => {
        recordWorkerProcess(ctx.store, { workerEpoch, ...process });
      }).catch((error) => {
        // The worker runs unrecorded: only a restarted host's reaping of it by its record is lost.
        ctx.log("worker.record_failed", { run: run.runId, error: logError(error) });
      }),
      life: launchingLife(live),
      diagnostic: null,
      openAttempt: null,
      factsStream: null,
      children: new Map(),
      timers: new Set(),
      done: Promise.resolve(),
    } satisfies ActiveWorker,
  );
  return worker;
}

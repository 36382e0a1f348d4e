/**
 * One controller worker process, from the host's side: the epoch is recorded before the spawn,
 * the child gets its own process group and bounded output files, and the launch envelope (the
 * pinned source it must verify) is its first frame. The durable record is `controller_workers`;
 * this holds what only the live host knows (the child, its reconciles, its timers).
 */
import type { Writable } from "node:stream";
import type { Claim } from "../../../state/claims.ts";
import {
  type PinnedController,
  recordControllerWorkerProcess,
  startControllerWorker,
} from "../../../state/controllers/controller-workers.ts";
import { corkForTick, writeFrame } from "../../../protocol/framing.ts";
import {
  CONTROLLER_LAUNCH_SCHEMA,
  CONTROLLER_PROTOCOL_VERSION,
  CONTROLLER_PUSH_SCHEMA,
  type ControllerLaunch,
} from "../../../protocol/controller-worker.ts";
import type { WorkflowSource } from "../../../protocol/worker-launch.ts";
import type { HostContext } from "../../host-context.ts";
import {
  type ChildCommand,
  nameChild,
  spawnChild,
  type SupervisedChild,
} from "../children/spawn-child.ts";
import { stopChildGroup } from "../children/retire-child.ts";
import type { ProcessRegistry } from "../process-registry.ts";
import { logError } from "../../host-log.ts";
import type { Timers } from "../children/timers.ts";
import {
  beginControllerStop,
  type ControllerLife,
  type ControllerWorkerStop,
  launchingControllerLife,
} from "./controller-life.ts";

/** One reconcile the host has assigned to a controller worker. */
export interface ActiveReconcile {
  /** `<uid>:<generation>`. */
  id: string;
  uid: string;
  claim: Claim;
  /** The version the reconcile read: the compare-and-set token of its status write. */
  resourceVersion: number;
  consecutiveErrors: number;
  /** The host committed the end of this claim (result, deadline, interruption). */
  ended: boolean;
  timers: Timers;
}

export type { ControllerWorkerStop } from "./controller-life.ts";

export interface ControllerWorker {
  controllerId: string;
  controllerName: string;
  projectPath: string;
  sourceDigest: string;
  timeoutMs: number;
  workerEpoch: string;
  spawned: SupervisedChild;
  /** Its phase and whether it is blocked, changed only by controller-life.ts's transitions. */
  life: ControllerLife;
  /** Reconciles assigned and not yet reported finished by the worker (ended ones included). */
  reconciles: Map<string, ActiveReconcile>;
  /** When it last had nothing to do (idle stop). */
  idleSince: number;
  timers: Timers;
  /** Resolves once the process is gone and exit handling is done. */
  done: Promise<void>;
}

/** How controller workers are started: the same for every controller of one host. */
export interface ControllerWorkerCommand {
  command: ChildCommand;
  env: NodeJS.ProcessEnv;
  registry: ProcessRegistry;
}

export interface LaunchControllerOptions extends ControllerWorkerCommand {
  onOutputExceeded(worker: ControllerWorker): void;
}

/** Records the epoch, spawns the worker and sends the launch envelope. */
export function launchControllerWorker(
  ctx: HostContext,
  controller: PinnedController,
  opts: LaunchControllerOptions,
): ControllerWorker {
  const workerEpoch = ctx.ids.next("cwep");
  startControllerWorker(ctx.store, {
    workerEpoch,
    controllerId: controller.controllerId,
    sourceDigest: controller.sourceDigest,
  });
  const worker = {} as ControllerWorker;
  const spawned = spawnChild(ctx, {
    args: ["worker", "--controller"],
    command: opts.command,
    // The host's base environment. Like a run worker it starts in the state directory with the
    // compile cache there (the CLI's modules and the controller's are then parsed once, not at
    // every start) and enters the project itself.
    extraEnv: opts.env,
    logStem: workerEpoch,
    onOutputExceeded: () => opts.onOutputExceeded(worker),
    register: { registry: opts.registry, kind: "worker", runId: null },
  });
  Object.assign(
    worker,
    {
      controllerId: controller.controllerId,
      controllerName: controller.name,
      projectPath: controller.projectPath,
      sourceDigest: controller.sourceDigest,
      timeoutMs: controller.timeoutMs,
      workerEpoch,
      spawned,
      life: launchingControllerLife(),
      reconciles: new Map(),
      idleSince: ctx.clock.now(),
      timers: new Set(),
      done: Promise.resolve(),
    } satisfies ControllerWorker,
  );
  const launch: ControllerLaunch = {
    schema: CONTROLLER_LAUNCH_SCHEMA,
    workerEpoch,
    controllerId: controller.controllerId,
    controllerName: controller.name,
    projectPath: controller.projectPath,
    source: JSON.parse(controller.sourceJson) as WorkflowSource,
    sourceDigest: controller.sourceDigest,
    protocolVersion: CONTROLLER_PROTOCOL_VERSION,
  };
  writeFrame(spawned.channel, launch).catch(() => {
    // The child died before reading: its exit is handled like a crash.
  });
  return worker;
}

/**
 * Names the worker's start identity in its epoch record before its channel is read (the kit's
 * nameChild); a record that cannot be written is logged, the worker still runs.
 */
export async function nameControllerWorker(
  ctx: HostContext,
  worker: ControllerWorker,
): Promise<void> {
  try {
    await nameChild(worker.spawned, (process) => {
      recordControllerWorkerProcess(ctx.store, { workerEpoch: worker.workerEpoch, ...process });
    });
  } catch (error) {
    // A busy database: the worker still runs and is stopped with the host; only a restarted
    // host's reaping of it by its record is lost.
    ctx.log("controller.worker_record_failed", { error: logError(error) });
  }
}

/** Sends one host push frame (assign, abort) to the worker. */
export function pushToWorker(worker: ControllerWorker, frame: Record<string, unknown>): void {
  writeToWorker(worker.spawned.channel, { schema: CONTROLLER_PUSH_SCHEMA, ...frame }).catch(() => {
    // The worker is gone: its exit handling interrupts its reconciles.
  });
}

/**
 * Writes one frame to a controller worker's channel. The frames of one tick (the replies and
 * assignments one group commit released) leave in one write (`corkForTick`), so the reconciles one
 * commit answered cost one system call and one wake-up of the worker, not one each. A host that
 * dies before the uncork loses them like frames it never wrote (the worker sees the channel close
 * and the claims are recovered).
 */
export function writeToWorker(channel: Writable, value: unknown): Promise<void> {
  corkForTick(channel);
  return writeFrame(channel, value);
}

/** Stops the worker's process group once (`stuck`: without the grace period). */
export function stopControllerWorker(
  ctx: HostContext,
  worker: ControllerWorker,
  reason: ControllerWorkerStop,
): void {
  if (!beginControllerStop(worker, reason)) return;
  ctx.log("controller.worker_stop", { controller: worker.controllerName, reason });
  void stopChildGroup(worker.spawned, {
    graceMs: ctx.options.killGraceMs,
    immediate: reason === "stuck",
  });
}

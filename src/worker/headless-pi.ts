/**
 * The Pi children of a headless worker. One Pi serves the run's consecutive agent and decision
 * steps within a worker generation: a step takes the kept Pi when it was started with the same
 * arguments (else that one is stopped and a new one started on the same session file) and gives it
 * back when it ends; compute and shell nodes in between leave it running. It is stopped when the
 * run parks, waits or ends (run-worker.ts), when the worker leaves (main.ts), and after
 * `PI_WORKFLOWS_PI_IDLE_MS` (default 30 s) without a step. A step that is aborted (deadline,
 * pause, cancel, claim loss) or whose Pi died stops it at once; agent group members, which run in
 * parallel, start a Pi of their own and stop it when they end.
 *
 * Start: spawn (own process group) -> `hello` to the bridge -> `process.register` with the host,
 * awaited before any prompt. Stop: the group (tree) is stopped, then unregistered; the stop is
 * tracked, so the worker exits only once it is down (child-cleanups.ts).
 */
import { MAX_FRAME_BYTES, readFrames, writeFrame } from "../protocol/framing.ts";
import {
  type BridgeCall,
  bridgeHello,
  bridgeResult,
  parseBridgeCall,
} from "../protocol/pi-bridge-messages.ts";
import { readPositiveIntegerEnv } from "../os/env-integer.ts";
import type { ProcessGroupHooks } from "../workflows/shell-runner.ts";
import { setKeptChildStopper, trackCleanup } from "./child-cleanups.ts";
import { BRIDGE_TOOL } from "./pi-bridge-tool.ts";
import { type PiChild, type PiChildOptions, type PiExit, spawnPiChild } from "./pi-child.ts";

/** SIGTERM to SIGKILL for a Pi group (Pi shuts down promptly on SIGTERM). */
const PI_KILL_GRACE_MS = 1_000;
/** A kept Pi with no step for this long is stopped. */
const DEFAULT_PI_IDLE_MS = 30_000;
/** Longest wait for the previous step's agent run to settle before its Pi is reused. */
const SETTLE_BOUND_MS = 10_000;

export type ToolCallHandler = (call: BridgeCall) => Promise<void>;

export interface StepPi {
  readonly child: PiChild;
  /** The exit, once Pi is gone. */
  exit: PiExit | null;
  /** The tool call handler of the step using this Pi; null between steps. */
  onCall: ToolCallHandler | null;
  /**
   * Between Pi's `agent_start` and `agent_settled`. A kept Pi is reused only once its run settled:
   * a prompt sent before would be refused as "already processing", and the late settle would be
   * read as the next step's turn ending.
   */
  busy: boolean;
  /** Answers one tool call on the bridge. */
  reply(callId: string, verdict: { ok: boolean; text: string; terminate?: boolean }): void;
}

export interface StepPiStart extends PiChildOptions {
  processGroups: ProcessGroupHooks;
}

/** Spawns a Pi, sends the bridge its tool and registers the group with the host. */
export async function startStepPi(start: StepPiStart): Promise<StepPi> {
  const child = spawnPiChild(start);
  const pi: StepPi = {
    child,
    exit: null,
    onCall: null,
    busy: false,
    reply: (callId, verdict) => {
      writeFrame(child.bridge, bridgeResult(callId, verdict)).catch(() => {});
    },
  };
  child.exited.then((exit) => {
    pi.exit = exit;
  });
  child.onRecord((record) => {
    if (record.type === "agent_start") pi.busy = true;
    else if (record.type === "agent_settled") pi.busy = false;
  });
  const registered = start.processGroups.started(child.pid).then(() => true);
  groupHooks.set(pi, { hooks: start.processGroups, registered });
  // Pi reads the hello while it loads the bridge; the pipe holds it until then.
  writeFrame(child.bridge, bridgeHello(BRIDGE_TOOL)).catch(() => {});
  serveBridge(pi);
  try {
    await registered;
  } catch (error) {
    stopStepPi(pi);
    throw error;
  }
  return pi;
}

/** Tool calls, one at a time in the order the bridge sent them, to the current step. */
function serveBridge(pi: StepPi): void {
  void (async () => {
    let queue: Promise<void> = Promise.resolve();
    for await (const frame of readFrames(pi.child.bridge, { maxBytes: MAX_FRAME_BYTES })) {
      if (!frame.ok) continue;
      const call = parseBridgeCall(frame.value);
      if (!call.ok) continue;
      queue = queue.then(() => {
        const handler = pi.onCall;
        if (handler) return handler(call.value);
        pi.reply(call.value.callId, {
          ok: false,
          text: "This step is already finished: end your turn.",
        });
      });
    }
  })().catch(() => {});
}

const groupHooks = new WeakMap<
  StepPi,
  { hooks: ProcessGroupHooks; registered: Promise<boolean> }
>();

/** Stops the Pi's whole group and unregisters it; tracked until done. */
export function stopStepPi(pi: StepPi): void {
  if (kept?.pi === pi) {
    clearTimeout(kept.timer);
    kept = null;
  }
  pi.onCall = null;
  const group = groupHooks.get(pi);
  groupHooks.delete(pi);
  trackCleanup((async () => {
    await pi.child.stop(PI_KILL_GRACE_MS);
    if (group && await group.registered.catch(() => false)) {
      await group.hooks.stopped(pi.child.pid).catch(() => {});
    }
  })());
}

interface KeptPi {
  pi: StepPi;
  key: string;
  timer: ReturnType<typeof setTimeout>;
}

/** This worker's kept Pi (one run per worker, so at most one). */
let kept: KeptPi | null = null;

/**
 * The run's Pi for a step: the kept one when it was started with the same command and
 * arguments and is still running (after its last run settled), else a new one.
 */
export async function acquireRunPi(start: StepPiStart): Promise<StepPi> {
  const key = JSON.stringify([start.command, start.args]);
  const found = kept;
  if (found !== null) {
    clearTimeout(found.timer);
    kept = null;
    if (found.key === key && found.pi.exit === null && await settledWithin(found.pi)) {
      return found.pi;
    }
    stopStepPi(found.pi);
  }
  return await startStepPi(start);
}

/** Gives the run's Pi back after a step that ended normally: kept until the next step. */
export function keepRunPi(pi: StepPi, start: Pick<StepPiStart, "command" | "args">): void {
  pi.onCall = null;
  if (pi.exit !== null) {
    stopStepPi(pi);
    return;
  }
  if (kept !== null && kept.pi !== pi) stopStepPi(kept.pi);
  const idleMs = readPositiveIntegerEnv(process.env, "PI_WORKFLOWS_PI_IDLE_MS") ??
    DEFAULT_PI_IDLE_MS;
  const timer = setTimeout(() => stopKeptPi(), idleMs);
  timer.unref();
  kept = { pi, key: JSON.stringify([start.command, start.args]), timer };
  // Died while kept (killed between steps): gone and unregistered at once.
  pi.child.exited.then(() => {
    if (kept?.pi === pi) stopStepPi(pi);
  });
}

/** Stops the kept Pi, if any (the run parks, waits or ends; the worker leaves). */
export function stopKeptPi(): void {
  if (kept !== null) stopStepPi(kept.pi);
}
setKeptChildStopper(stopKeptPi);

/** Whether Pi's last agent run settles (or had settled) within the bound. */
async function settledWithin(pi: StepPi): Promise<boolean> {
  if (!pi.busy) return pi.exit === null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stop = () => {};
  const settled = await new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), SETTLE_BOUND_MS);
    stop = pi.child.onRecord((record) => {
      if (record.type === "agent_settled") resolve(true);
    });
    pi.child.exited.then(() => resolve(false));
  });
  clearTimeout(timer);
  stop();
  return settled && pi.exit === null;
}

/**
 * The scheduler's tick: launch the runs that are due, in creation order, up to
 * `maxConcurrentWorkers`. A headless run without its provider credentials is blocked instead; a
 * run whose prepared process waits is launched into it. A spawn that fails settles the run at
 * once (a crash-like exit); a claim that cannot be taken launches nothing.
 */
import { type LaunchableRun, nextLaunchableRuns } from "../../state/transitions/run-launch.ts";
import { logError } from "../host-log.ts";
import type { ActiveWorker } from "../supervision/active-worker.ts";
import type { HostContext } from "../host-context.ts";
import { type LaunchHooks, launchWorker, WorkerSpawnError } from "../supervision/launch-worker.ts";
import type { PreparedChild, PreparedChildren } from "../supervision/prepared-children.ts";
import type { RunCredentials } from "../run-credentials.ts";
import { type CrashCounter, handleSpawnFailure } from "./worker-exit.ts";
import { retireChild } from "../supervision/children/retire-child.ts";

export interface LaunchDeps {
  active: ReadonlyMap<string, ActiveWorker>;
  credentials: RunCredentials;
  prepared: PreparedChildren;
  crashes: CrashCounter;
  maxCrashes: number;
  /** The launch hooks of `run` (prepared process and credentials are added here). */
  hooks(run: LaunchableRun): Omit<LaunchHooks, "prepared" | "credentials">;
  supervise(worker: ActiveWorker): void;
  schedule(): void;
}

export function launchDueRuns(ctx: HostContext, deps: LaunchDeps): void {
  const { active } = deps;
  const capacity = ctx.options.maxConcurrentWorkers - active.size;
  if (capacity <= 0) return;
  let candidates;
  try {
    candidates = nextLaunchableRuns(ctx.store, capacity + active.size)
      .filter((run) => !active.has(run.runId))
      .slice(0, capacity);
  } catch (error) {
    ctx.log("scheduler.query_failed", { error: logError(error) });
    return;
  }
  for (const run of candidates) launchRun(ctx, deps, run);
}

function launchRun(ctx: HostContext, deps: LaunchDeps, run: LaunchableRun): void {
  let kept: PreparedChild | null = null;
  try {
    if (run.executionMode === "headless" && deps.credentials.blockIfMissing(run.runId)) {
      ctx.log("run.blocked", { run: run.runId, reason: "credentialsMissing" });
      return;
    }
    // The run's prepared process, when one waits (its workflow already loaded).
    kept = deps.prepared.take(run.runId);
    deps.supervise(
      launchWorker(ctx, run, {
        ...deps.hooks(run),
        credentials: deps.credentials.forLaunch(run.runId),
        prepared: kept?.spawned ?? null,
      }),
    );
  } catch (error) {
    // The claim was not taken: nothing runs in the taken process, which is stopped.
    if (kept) stopTaken(ctx, kept);
    if (error instanceof WorkerSpawnError) {
      handleSpawnFailure(ctx, error, deps.crashes, deps.maxCrashes);
      deps.schedule();
    } else ctx.log("worker.launch_failed", { run: run.runId, error: logError(error) });
  }
}

/** A prepared process taken for an epoch whose claim did not commit: nothing runs in it. */
export function stopTaken(ctx: HostContext, taken: PreparedChild): void {
  void retireChild(taken.spawned, ctx.options.killGraceMs).catch((error) =>
    ctx.log("prepared.stop_failed", { error: logError(error) })
  );
}

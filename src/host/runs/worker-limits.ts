/**
 * The limits a worker can break while it runs, both enforced by the child kit: its captured
 * output (the cap holds at the write, children/captured-output.ts) and its resident memory
 * (sampled, children/memory-limit.ts). This says what breaking one means for a run: the host first
 * records why on the open attempt (`outputLimitExceeded` or `memoryLimitExceeded`,
 * a node failure the next worker routes from, like a host-enforced deadline) and parks the run,
 * then stops the worker's group. Without an open attempt the stop is a crash (the run is
 * relaunched, and fails after repeated crashes) whose diagnostic says the same.
 */
import type { FactError } from "../../protocol/run-facts.ts";
import { ClaimLostError } from "../../state/errors.ts";
import { failAttemptForLimit } from "../../state/transitions/node-attempts.ts";
import type { HostContext } from "../host-context.ts";
import type { ActiveWorker, StopReason } from "../supervision/active-worker.ts";
import type { CrashCounter } from "./worker-exit.ts";
import { holdsClaim, releaseClaim, stopReasonOf } from "../supervision/worker-life.ts";
import { MIB, watchMemory } from "../supervision/children/memory-limit.ts";

export type LimitReason = Extract<StopReason, "outputExceeded" | "memoryExceeded">;

export function outputLimitError(ctx: HostContext, stream: "stdout" | "stderr"): FactError {
  return {
    code: "outputLimitExceeded",
    message: `The worker wrote more than ${ctx.options.maxCapturedOutputBytes} bytes to its ` +
      `${stream}: the rest was cut and the worker was stopped (write less, or raise ` +
      "PI_WORKFLOWS_WORKER_OUTPUT_BYTES)",
  };
}

export function memoryLimitError(ctx: HostContext, bytes: number): FactError {
  return {
    code: "memoryLimitExceeded",
    message: `The worker used ${Math.round(bytes / MIB)} MiB of memory, more than its ` +
      `${ctx.options.maxWorkerMemoryMb} MiB cap: it was stopped (use less, or raise ` +
      "PI_WORKFLOWS_WORKER_MEMORY_MB)",
  };
}

/**
 * Records `error` on the worker's open attempt (when it has one and still holds its claim; the
 * run parks and the claim is released in the same commit) and returns the stop diagnostic. The
 * caller stops the worker.
 */
export function recordLimitFailure(
  ctx: HostContext,
  worker: ActiveWorker,
  error: FactError,
): { diagnostic: string; recorded: boolean } {
  const diagnostic = `${error.code}: ${error.message}`;
  const open = worker.openAttempt;
  if (open === null || !holdsClaim(worker) || stopReasonOf(worker) !== null) {
    return { diagnostic, recorded: false };
  }
  try {
    failAttemptForLimit(ctx.store, worker.claim, { attemptId: open.attemptId, error });
    worker.openAttempt = null;
    // Released with the commit: a late message from the worker now meets `claimLost`.
    releaseClaim(worker);
    return { diagnostic, recorded: true };
  } catch (failure) {
    if (failure instanceof ClaimLostError) releaseClaim(worker);
    // The attempt closed in between, or the claim is gone: the stop alone is what is left.
    return { diagnostic, recorded: false };
  }
}

export interface LimitWatch {
  /** Records why on the open attempt (a node failure to route from), then stops the worker. */
  exceeded(worker: ActiveWorker, reason: LimitReason, error: FactError): void;
  /** One memory sample of every live worker (a slow `ps` skips ticks instead of piling up). */
  sampleMemory(): Promise<void>;
}

export function createLimitWatch(
  ctx: HostContext,
  deps: {
    workers(): Iterable<ActiveWorker>;
    stop(worker: ActiveWorker, reason: StopReason, diagnostic: string): void;
    /** The open attempt's deadline is off once its failure is recorded. */
    clearAttemptDeadline(worker: ActiveWorker): void;
    crashes: CrashCounter;
  },
): LimitWatch {
  const exceeded = (worker: ActiveWorker, reason: LimitReason, error: FactError) => {
    if (stopReasonOf(worker) !== null) return;
    const { diagnostic, recorded } = recordLimitFailure(ctx, worker, error);
    if (recorded) {
      deps.clearAttemptDeadline(worker);
      deps.crashes.reset(worker.runId);
    }
    ctx.log("worker.limit", { run: worker.runId, generation: worker.generation, limit: reason });
    deps.stop(worker, reason, diagnostic);
  };
  return {
    exceeded,
    sampleMemory: watchMemory({
      children: deps.workers,
      running: (worker) => stopReasonOf(worker) === null,
      capMb: ctx.options.maxWorkerMemoryMb,
      over: (worker, bytes) => exceeded(worker, "memoryExceeded", memoryLimitError(ctx, bytes)),
    }),
  };
}

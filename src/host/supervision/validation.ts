/**
 * Validation children: an interactive submission is checked by workflow code, which the host
 * never runs. For each `validating` submission the host starts `pi-workflows worker --validate`
 * with the run's recorded environment (the child kit: own process group, bounded output, fd-3
 * framing, registered as a validator), or borrows the run's prepared process, and holds ONE
 * exchange with it under the kit's bound (validation-exchange.ts: the request, the facts, the
 * fenced verdict, its commit and reply). A child that stops, hangs past the bound or breaks the
 * protocol rejects the provisional submission with a clear reason: the request stays ready for a
 * corrected retry. A fresh child is retired in the kit's one order; a prepared one goes back to
 * its pool (or is stopped there when the exchange broke).
 *
 * One child per submission at a time; asking again joins it. The promise resolves once the
 * submission is decided (or the host shuts down, leaving it `validating` for recovery step 9).
 * `validateNow` is the one rule of when a submission is validated at once in the run's prepared
 * process (borrowed) and when it waits or gets a fresh child (declined).
 */
import type { WorkerLaunch } from "../../protocol/worker-launch.ts";
import { envelopeBase } from "./launch-worker.ts";
import { readValidationJob, type ValidationJob } from "../../state/interaction-queries.ts";
import { rejectVerdict, type VerdictJob } from "../worker-messages/interaction-verdicts.ts";
import type { HeldSubmission } from "../held-submission.ts";
import type { PreparedChild } from "./prepared-children.ts";
import type { HostContext } from "../host-context.ts";
import { spawnChild, type SupervisedChild } from "./children/spawn-child.ts";
import { retireChild } from "./children/retire-child.ts";
import { armChildDeadline } from "./children/child-deadline.ts";
import { createLiveChildren, type LiveChild } from "./children/live-children.ts";
import { recordedRunEnvironment } from "./children/child-environment.ts";
import { logError } from "../host-log.ts";
import type { AheadStart } from "../worker-messages/speculative-start.ts";
import {
  type Broken,
  brokenError,
  readVerdict,
  sendRequest,
  type ValidationDeps,
} from "./validation-exchange.ts";

/** How long the node's rules may take once the child is up (beyond the start-up deadline). */
export const VALIDATE_BOUND_MS = 60_000;

export interface Validations {
  /** Starts (or joins) the child of a validating submission; resolves once it is decided. */
  validate(submissionId: string): Promise<void>;
  /**
   * Borrows the run's prepared process and writes the validate request now, synchronously, or
   * declines (null): the host is stopping, the submission already validates, no process of the
   * run is idle, or the run's epoch is still saying goodbye (its process may be kept: `validate`
   * waits for that). `held`: the submission is not recorded yet (held-submission.ts), it is read
   * from the caller's open transaction and recorded with its verdict.
   */
  validateNow(submissionId: string, held?: HeldSubmission): Promise<void> | null;
  /**
   * While the run's epoch is still saying goodbye (its request committed, `worker.exiting` not
   * read yet), the only reason `validateNow` would decline a submission of it: resolves once its
   * process is kept (borrowable) or gone. Null otherwise.
   */
  goodbyeOf(runId: string): Promise<unknown> | null;
  /** Children running now. */
  count(): number;
  /** Stops the run's children (the run was cancelled: their verdicts could change nothing). */
  stopRun(runId: string): Promise<void>;
  /** Stops every child (host shutdown); their submissions stay `validating`. */
  shutdown(): Promise<void>;
}

export function createValidations(
  ctx: HostContext,
  deps: ValidationDeps & { stopping(): boolean },
): Validations {
  /** Per submission: resolves once its verdict committed (asking again joins it). */
  const decisions = new Map<string, Promise<void>>();
  const live = createLiveChildren();
  let closing = false;

  const validate = (submissionId: string): Promise<void> => {
    const existing = decisions.get(submissionId);
    if (existing) return existing;
    if (closing) return Promise.resolve();
    const job = readValidationJob(ctx.store, submissionId);
    if (!job) return Promise.resolve();
    return start(job, null);
  };

  const validateNow = (submissionId: string, held?: HeldSubmission): Promise<void> | null => {
    if (closing || deps.stopping() || decisions.has(submissionId)) return null;
    const job = readValidationJob(ctx.store, submissionId);
    if (!job || deps.epochEnding?.(job.runId)) return null;
    const prepared = deps.prepared?.borrow(job.runId) ?? null;
    if (prepared === null) return null;
    return start(held ? { ...job, held } : job, prepared);
  };

  /** Runs the job's exchange, in `prepared` when given (borrowed), else as runChild decides. */
  const start = (job: VerdictJob, prepared: PreparedChild | null): Promise<void> => {
    const { submissionId } = job;
    let resolveDecided = () => {};
    const decided = new Promise<void>((resolve) => (resolveDecided = resolve));
    // Asking again after the verdict starts anew: a stale verdict leaves the row validating.
    const markDecided = () => {
      resolveDecided();
      if (decisions.get(submissionId) === decided) decisions.delete(submissionId);
    };
    const child: ValidationChild = {
      runId: job.runId,
      spawned: null,
      stopped: false,
      stop: () => {
        child.stopped = true;
        child.spawned?.channel.destroy();
        return done;
      },
    };
    // The caller hears the verdict at once; stopping the child's group happens after.
    const done = runChild(ctx, deps, job, child, markDecided, prepared).catch((error) => {
      ctx.log("validation.failed", { run: job.runId, error: logError(error) });
    }).finally(() => {
      markDecided();
      live.remove(child);
    });
    decisions.set(submissionId, decided);
    live.add(child);
    return decided;
  };

  return {
    validate,
    validateNow,
    goodbyeOf: (runId) => closing || deps.stopping() ? null : deps.epochEnding?.(runId) ?? null,
    count: live.count,
    stopRun: live.stopRun,
    shutdown() {
      closing = true;
      return live.stopAll();
    },
  };
}

/** A submission's child (`spawned` once started); `stopped`: the host needs no verdict. */
type ValidationChild = LiveChild & { spawned: SupervisedChild | null; stopped: boolean };

async function runChild(
  ctx: HostContext,
  deps: ValidationDeps,
  job: VerdictJob,
  child: ValidationChild,
  decidedHook: () => void,
  /** The run's prepared process, already borrowed (validateNow); else decided here. */
  borrowed: PreparedChild | null,
): Promise<void> {
  const workerEpoch = ctx.ids.next("vep");
  const launch = validationLaunch(job, workerEpoch);
  const ending = borrowed ? null : deps.epochEnding?.(job.runId);
  if (ending) {
    await ending;
    // Cancelled, timed out or stopped meanwhile: nothing to validate any more.
    if (child.stopped || !readValidationJob(ctx.store, job.submissionId)) return;
  }
  const broken: Broken = { failure: null, tooLarge: false };
  const next: { epoch: (() => void) | null } = { epoch: null };
  // The run's prepared process (its last worker, workflow loaded) when one waits; else a fresh
  // child. The exchange below is the same for both.
  const prepared = borrowed ?? deps.prepared?.borrow(job.runId) ?? null;
  const spawned = prepared?.spawned ?? spawnChildFor(ctx, deps, job, workerEpoch, () => {
    broken.failure = "its output passed the capture limit";
    spawned.channel.destroy();
  });
  child.spawned = spawned;
  const boundMs = (prepared ? 0 : ctx.options.workerStartupMs) + VALIDATE_BOUND_MS;
  const deadline = armChildDeadline(spawned, boundMs, () => {
    broken.failure = `it gave no verdict within ${boundMs} ms`;
  });
  // A prepared process may propose the epoch an acceptance launches in it ahead, under this
  // header (speculative-start.ts).
  const ahead = prepared && deps.launchAccepted ? aheadHeader(ctx, job) : null;
  try {
    const exchange = { ctx, deps, job, launch, spawned, prepared, ahead, broken };
    const facts = await sendRequest(exchange);
    const decided = await readVerdict(exchange, facts, {
      decided: decidedHook,
      launched: (start) => (next.epoch = start),
    });
    if (!decided && !child.stopped) {
      rejectVerdict(ctx, job, brokenError(broken));
      decidedHook();
    }
  } finally {
    deadline.disarm();
    if (prepared) {
      // Broken, stopped or late: it is not used again (released above when it answered).
      deps.prepared!.release(prepared, false);
    } else {
      await retireChild(spawned, ctx.options.killGraceMs);
    }
  }
  // The run's next epoch in the same process, read by its session only now that this exchange
  // stopped reading the channel.
  next.epoch?.();
}

/**
 * The epoch an acceptance would launch in the run's prepared process: the next claim generation
 * (an acceptance commits only under the request's own) and an epoch id chosen now.
 */
function aheadHeader(ctx: HostContext, job: ValidationJob): AheadStart {
  return {
    generation: job.generation + 1,
    workerEpoch: ctx.ids.next("wep"),
    factsRevision: null,
    messages: [],
    committed: false,
  };
}

/** The launch header of a validation child: the run, the generation it waits under, an epoch. */
function validationLaunch(job: ValidationJob, workerEpoch: string): WorkerLaunch {
  const base = envelopeBase({ ...job, executionMode: "interactive" }, workerEpoch);
  return { ...base, generation: job.generation };
}

/** A fresh `worker --validate` child with the run's recorded environment, as its workers get. */
function spawnChildFor(
  ctx: HostContext,
  deps: ValidationDeps,
  job: ValidationJob,
  workerEpoch: string,
  outputExceeded: () => void,
): SupervisedChild {
  return spawnChild(ctx, {
    args: ["worker", "--validate"],
    command: deps.command,
    runEnvironment: recordedRunEnvironment(ctx.store, job.runId),
    extraEnv: deps.env(job.runId),
    logStem: workerEpoch,
    onOutputExceeded: outputExceeded,
    register: { registry: deps.registry, kind: "validator", runId: job.runId },
  });
}

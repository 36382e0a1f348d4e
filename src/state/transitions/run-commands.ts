/**
 * Operator commands on a run (pause, resume, cancel). Each commits the change, the released
 * claim and the command receipt in ONE transaction, so an acknowledged command is durable and a
 * crash before commit leaves no trace. The host then stops the fenced worker group.
 */
import { blockingAttempt } from "../effect-queries.ts";
import { readBudgetStop } from "../budget-stop.ts";
import {
  AmbiguousEffectError,
  BudgetExceededError,
  endedState,
  RevisionConflictError,
  TransitionError,
} from "../errors.ts";
import { type Claim, releaseLeaseInTx, runResource } from "../claims.ts";
import { type RunRow } from "../protected-write.ts";
import { type CommandReceiptInput, recordHostCommandInTx } from "../host-commands.ts";
import { appendHistory, type JournalEntry, nextRevision } from "../journal.ts";
import { type StateStore } from "../store.ts";
import { execute, queryOne } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { takeAuthorityInTx } from "./control-claim.ts";
import {
  cancelPendingInteractions,
  closeAttempt,
  describeState,
  externalOutcomeUncertain,
  isTerminalRunState,
  openAttempt,
  requireRun,
  setQueueState,
  settleEffectsOnStop,
  stopAtBoundary,
} from "./common.ts";
import type { TransitionResult } from "./run-enqueue.ts";
import { defaultForkNode, parentAttempts, retryForkNode } from "./run-fork.ts";
import { supersedeRunIntentsInTx } from "./turn-intents.ts";
import { type AcceptedSource, acceptSourceInTx } from "./source-accept.ts";

export type { AcceptedSource } from "./source-accept.ts";

export interface RunCommandOptions {
  runId: string;
  /**
   * The caller's own claim of this run (the host's, for the worker it launched), or null. When it
   * is exactly the live claim it is released; any other live claim refuses the command
   * (`ClaimLostError ownerChanged`); an expired or fenced one is replaced by a control claim.
   */
  claim: Claim | null;
  /** Receipt committed with the change. */
  receipt?: CommandReceiptInput;
  /** The revision the client saw; a mismatch throws `RevisionConflictError`, nothing changes. */
  expectedRevision?: number;
}

/** The outcome of a command transition. */
export interface CommandResult extends TransitionResult {
  /** True when a live worker claim was released: the host must stop that worker group. */
  stopWorker: boolean;
}

/**
 * `paused = 1`. A live run parks (`running/parked`, its running attempt `interrupted`, claim
 * released); a queued or waiting run keeps its state and is skipped until resumed.
 */
export function pauseRun(store: StateStore, opts: RunCommandOptions): CommandResult {
  const allowed = (r: RunRow) => !r.paused && !isTerminalRunState(r.state);
  return command(store, opts, "pause", allowed, (run, now) => {
    const live = run.state === "running" && run.queue_state !== "parked";
    if (live) {
      stopAtBoundary(store, run.run_id, now, {
        code: "paused",
        message: "The run was paused before the node finished",
      });
    }
    execute(store, "UPDATE runs SET paused = 1 WHERE run_id = :runId", { runId: run.run_id });
    return {
      type: "run.paused",
      payload: {},
      summary: { state: run.state, queue: live ? "parked" : run.queue_state, paused: true },
    };
  });
}

/**
 * Clears `paused` and a `workflowSourceChanged` block, so the scheduler can launch the run again
 * with a new claim generation from its last durable boundary. With `acceptSource` the block is
 * cleared by re-pinning the run to the changed file (source-accept.ts). A run blocked on an ambiguous
 * effect is refused (`AmbiguousEffectError`): the effect may have applied, so only the operator's
 * reviewed recovery (`resolveAmbiguousEffect`) may let it run on.
 */
export function resumeRun(
  store: StateStore,
  opts: Omit<RunCommandOptions, "claim"> & { claim?: Claim | null; acceptSource?: AcceptedSource },
): CommandResult {
  const allowed = (r: RunRow) =>
    (r.paused === 1 || r.blocked_reason !== null) && !isTerminalRunState(r.state);
  return command(store, { ...opts, claim: opts.claim ?? null }, "resume", allowed, (run) => {
    if (opts.acceptSource) return acceptSourceInTx(store, run, opts.acceptSource);
    if (run.blocked_reason === "budgetExceeded") {
      throw new BudgetExceededError(run.run_id, readBudgetStop(store, run.run_id));
    }
    if (run.blocked_reason === "effectAmbiguous") {
      const blocked = blockingAttempt(store, run.run_id);
      throw new AmbiguousEffectError(run.run_id, {
        attemptId: blocked?.attemptId ?? "(unknown)",
        nodeId: blocked?.nodeId ?? "(unknown)",
        effectIds: blocked?.effectIds ?? [],
      });
    }
    execute(
      store,
      "UPDATE runs SET paused = 0, blocked_reason = NULL, blocked_detail = NULL " +
        "WHERE run_id = :runId",
      { runId: run.run_id },
    );
    return {
      type: "run.resumed",
      payload: { wasBlocked: run.blocked_reason },
      summary: { state: run.state, queue: run.queue_state, paused: false },
    };
  });
}

/**
 * Terminal `cancelled/cancelled`: the open attempt is cancelled, pending effects cancelled and
 * applying ones ambiguous, pending decisions and interactive requests cancelled, claim released.
 */
export function cancelRun(store: StateStore, opts: RunCommandOptions): CommandResult {
  const allowed = (r: RunRow) => !isTerminalRunState(r.state);
  return command(store, opts, "cancel", allowed, (run, now) => {
    const open = openAttempt(store, run.run_id);
    if (open) {
      closeAttempt(store, open.attempt_id, "cancelled", now, {
        code: "cancelled",
        message: "The run was cancelled",
      });
      // An external node stopped part way may have applied: with no managed effect to say
      // otherwise it is kept as an ambiguous effect to check by hand, as a pause would keep it.
      if (open.effect === "external") externalOutcomeUncertain(store, open.attempt_id, now);
    }
    settleEffectsOnStop(store, run.run_id, now);
    cancelPendingInteractions(store, run.run_id, now);
    // A cancel is the user's own act: no successor turn follows it.
    supersedeRunIntentsInTx(store, run.run_id, now);
    setQueueState(store, run.run_id, "cancelled", now);
    // One update: a terminal run row accepts no later change. A block ends with the run (it
    // read as "blocked" for good, e.g. a controller child cancelled for `unsupportedInput`).
    execute(
      store,
      "UPDATE runs SET state = 'cancelled', paused = 0, blocked_reason = NULL, " +
        "blocked_detail = NULL, finished_at = :now, state_changed_at = :now, " +
        "error_code = 'cancelled', " +
        "error_message = 'The run was cancelled' WHERE run_id = :runId",
      { runId: run.run_id, now },
    );
    return { type: "run.cancelled", payload: {}, summary: { state: "cancelled" } };
  });
}

/**
 * One operator command: the run is read, checked (`expectedRevision`, `allowed`), changed by
 * `apply`, its claim taken or released and the receipt stored, in one transaction.
 */
export function command(
  store: StateStore,
  opts: RunCommandOptions,
  transition: string,
  allowed: (run: RunRow) => boolean,
  apply: (run: RunRow, now: number) => JournalEntry,
): CommandResult {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const run = requireRun(store, opts.runId);
    if (opts.expectedRevision !== undefined && opts.expectedRevision !== run.revision) {
      throw new RevisionConflictError(opts.runId, opts.expectedRevision, run.revision);
    }
    if (!allowed(run)) {
      throw new TransitionError(run.run_id, transition, refusal(store, transition, run));
    }
    const authority = takeAuthorityInTx(store, opts.runId, opts.claim, now);
    const revision = nextRevision(store, opts.runId);
    const entry = apply(run, now);
    if (authority !== "none") releaseLeaseInTx(store, runResource(opts.runId), now);
    appendHistory(store, opts.runId, revision, now, entry);
    if (opts.receipt) {
      recordHostCommandInTx(store, opts.receipt, { runId: opts.runId, revision, now });
    }
    return {
      runId: opts.runId,
      revision,
      stopWorker: authority === "own" || authority === "control",
    };
  });
}

/**
 * Why an operator's command does not apply, in the words of the person who asked, and what
 * moves the run on instead when something does (docs/cli.md's commands).
 */
function refusal(store: StateStore, transition: string, run: RunRow): string {
  const id = run.run_id;
  if (isTerminalRunState(run.state)) {
    if (transition !== "resume") return endedState(run.state);
    return `${endedState(run.state)} and does not run again; ${runAgain(store, run)}`;
  }
  if (transition === "pause") return "it is paused already";
  if (transition === "resume") {
    return `${describeState(run)}, not paused or blocked: ` +
      (run.state === "waiting"
        ? `'pi-workflows status ${id}' says what it waits for`
        : "it goes on by itself");
  }
  // Raising a budget while a worker spends against it would race that worker.
  return `${describeState(run)}; pause it first ('pi-workflows pause ${id}'), or raise the ` +
    "budget once it stops at it";
}

/**
 * The command that runs an ended run again, one the host accepts (host/run-rerun.ts): `retry`
 * only where it failed in a node, a plain `rerun` only where it stopped at one, else `--from`;
 * an interactive run's from a Pi session, which asks its steps.
 */
function runAgain(store: StateStore, run: RunRow): string {
  const id = run.run_id;
  const attempts = parentAttempts(store, id);
  if (attempts.length === 0) {
    return "it ran no node, so there is nothing to rerun: start its workflow again";
  }
  const binding = queryOne<{ execution_mode: string }>(
    store,
    "SELECT execution_mode FROM run_bindings WHERE run_id = :runId",
    { runId: id },
  );
  const interactive = binding?.execution_mode === "interactive";
  const cli = interactive ? "/workflow" : "pi-workflows";
  const where = interactive ? " from a Pi session" : "";
  if ((run.state === "failed" || run.state === "timed_out") && retryForkNode(attempts)) {
    return `'${cli} retry ${id}'${where} reruns it from the node that stopped it`;
  }
  const from = defaultForkNode({ state: run.state, queueState: run.queue_state }, attempts)
    ? ""
    : " --from <node>";
  return `'${cli} rerun ${id}${from}'${where} starts a new run from it`;
}

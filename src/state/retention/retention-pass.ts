/**
 * One retention pass over the state database, in short write transactions the caller runs one
 * at a time (`step()`), so the host serves commands between them and never holds the write lock
 * for long. Its phases, in order: the prune (ended, unreferenced runs past the retention period
 * and everything they own, in bounded transactions: prune-phase.ts), the definition snapshots
 * no run uses and client receipts of no run (definitions-phase.ts), controller events and worker
 * epochs past the period (controller-history.ts), compaction of ended runs and
 * the viewer feed's trim (compact-phase.ts), and last the incremental vacuum that gives the
 * freed pages back to the file (vacuum-phase.ts). A dry run only counts (reads).
 */
import type { StateStore } from "../store.ts";
import {
  createPassContext,
  type PassPhase,
  type PassSettings,
  type PrunedFiles,
  type RetentionReport,
} from "./pass-context.ts";
import { createPrunePhase } from "./prune-phase.ts";
import { createDefinitionsPhase, createRunlessReceiptsPhase } from "./definitions-phase.ts";
import { createCompactPhase, createFeedPhase } from "./compact-phase.ts";
import { createControllerHistoryPhase } from "./controller-history.ts";
import { createVacuumPhase } from "./vacuum-phase.ts";
import { fileBytes, pageSize, usedPages } from "./database-pages.ts";

export type { PrunedFiles, RetentionReport } from "./pass-context.ts";
export {
  DAY_MS,
  DEFAULT_KEEP_DAYS,
  FEED_WINDOW_MS,
  RETRY_WINDOW_MS,
  RUNS_PRUNED_DELTA,
  STEP_BUDGET_MS,
} from "./retention-policy.ts";

export type RetentionOptions = PassSettings;

export interface RetentionPass {
  readonly report: RetentionReport;
  /**
   * The files of the runs deleted so far whose deletion is durable, not taken before: the host
   * removes them as the pass goes (after each of its checkpoints, and all at its end).
   */
  takePruned(): PrunedFiles;
  /**
   * Runs one short write transaction, or starts one of the pass's checkpoints; false once the
   * pass is complete. Throws what a transaction or a checkpoint threw: the pass is over then
   * (each transaction left every run whole, marked or gone; the next pass finishes the work).
   */
  step(): boolean;
  /**
   * While a checkpoint of the pass runs on the checkpoint runner's thread: settles (never
   * rejects) once it ended, and the caller waits for it before the next step (a step meanwhile
   * does nothing). Null otherwise, always without a runner.
   */
  waiting(): Promise<void> | null;
}

/**
 * Starts a pass at the store clock's now. Its first step is a checkpoint: the file's size counts
 * once the WAL is copied back into it.
 */
export function createRetentionPass(store: StateStore, options: RetentionOptions): RetentionPass {
  const ctx = createPassContext(store, options, 0);
  let usedBefore = 0;
  const phases: PassPhase[] = [
    createPrunePhase(ctx),
    createDefinitionsPhase(ctx),
    createRunlessReceiptsPhase(ctx),
    createControllerHistoryPhase(ctx),
    createCompactPhase(ctx),
    createFeedPhase(ctx, () => {
      // What the pass freed, before the vacuum gives it back.
      ctx.report.bytes = Math.max(0, usedBefore - usedPages(store)) * pageSize(store);
    }),
    createVacuumPhase(ctx),
  ];
  let opened = false;
  let current = 0;
  let done = false;
  let waiting: Promise<void> | null = null;
  let failure: unknown = null;
  /** A checkpoint, then `then` (here, or once the runner's thread answered). */
  const checkpoint = (then: () => void): void => {
    if (ctx.dryRun) return then();
    const started = ctx.checkpoints.run();
    if (!started) return then();
    const settled: Promise<void> = started.then(then).catch((error) => {
      failure = error;
    }).finally(() => {
      if (waiting === settled) waiting = null;
    });
    waiting = settled;
  };
  /**
   * A phase whose transaction failed ends the pass: the names it gathered for the host (the
   * deleted runs' epochs and attempts) include rows the rollback restored.
   */
  const stepPhase = (phase: { step(): boolean }): boolean => {
    try {
      return phase.step();
    } catch (error) {
      failure = error;
      throw error;
    }
  };
  return {
    report: ctx.report,
    takePruned: ctx.takePruned,
    waiting: () => waiting,
    step() {
      if (failure !== null) throw failure;
      if (waiting) return true;
      if (done) return false;
      if (!opened) {
        opened = true;
        checkpoint(() => {
          ctx.report.fileBytesBefore = fileBytes(store);
          usedBefore = usedPages(store);
        });
        return true;
      }
      if (current < phases.length) {
        // A checkpoint due is a step of its own: the host serves between it and a transaction.
        if (ctx.checkpoints.due()) checkpoint(ctx.makeDurable);
        else if (stepPhase(phases[current]!)) current++;
        if (current < phases.length || waiting) return true;
      }
      // The last: so the file's size shows the vacuum, and every commit of the pass is durable
      // before the host removes the deleted runs' files.
      checkpoint(() => {
        ctx.report.fileBytesAfter = fileBytes(store);
        ctx.makeDurable();
        done = true;
      });
      return !done;
    },
  };
}

/** Runs a whole pass at once, without a checkpoint runner (tests, the benchmark's baseline). */
export function runRetentionPass(store: StateStore, options: RetentionOptions): RetentionPass {
  if (options.checkpointRunner) throw new Error("runRetentionPass checkpoints in line");
  const pass = createRetentionPass(store, options);
  while (pass.step()) { /* next step */ }
  return pass;
}

/**
 * One retention pass over the state database, in short write transactions the caller runs one
 * at a time (`step()`), so the host serves commands between them and never holds the write lock
 * for long. Its phases, in order: the prune (ended, unreferenced runs past the retention period
 * and everything they own, a run at a time in bounded transactions: prune-phase.ts), the definition snapshots
 * no run uses and client receipts of no run (definitions-phase.ts), compaction of ended runs and
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
  /** Runs one short write transaction; false once the pass is complete. */
  step(): boolean;
}

/** Starts a pass at the store clock's now. */
export function createRetentionPass(store: StateStore, options: RetentionOptions): RetentionPass {
  // The file's size counts once the WAL is copied back into it (a passive checkpoint: it waits
  // for no reader and holds no write lock).
  if (!options.dryRun) store.db.exec("PRAGMA wal_checkpoint(PASSIVE)");
  const usedBefore = usedPages(store);
  const ctx = createPassContext(store, options, fileBytes(store));
  const phases: PassPhase[] = [
    createPrunePhase(ctx),
    createDefinitionsPhase(ctx),
    createRunlessReceiptsPhase(ctx),
    createCompactPhase(ctx),
    createFeedPhase(ctx, () => {
      // What the pass freed, before the vacuum gives it back.
      ctx.report.bytes = Math.max(0, usedBefore - usedPages(store)) * pageSize(store);
    }),
    createVacuumPhase(ctx),
  ];
  let current = 0;
  return {
    report: ctx.report,
    takePruned: ctx.takePruned,
    step() {
      if (current >= phases.length) return false;
      // A checkpoint due is a step of its own: the host serves between it and a transaction.
      if (ctx.checkpoints.due()) {
        // A complete checkpoint synced the file with every commit in it: no fsync of the WAL.
        ctx.makeDurable(ctx.checkpoints.run());
      } else if (phases[current].step()) current++;
      if (current < phases.length) return true;
      ctx.makeDurable();
      return false;
    },
  };
}

/** Runs a whole pass at once (tests, the benchmark); the host steps it between commands. */
export function runRetentionPass(store: StateStore, options: RetentionOptions): RetentionPass {
  const pass = createRetentionPass(store, options);
  while (pass.step()) { /* next step */ }
  return pass;
}

/**
 * How many runs the next prune transaction may take (prune-phase.ts), from what the pass's
 * transactions cost so far. A transaction's cost is mostly the pages it dirties, and consecutive
 * runs (in end order) share many of them: the interior pages of the ~50 B-trees a run's rows lie
 * in, the leaves of the tables keyed in run order (events, attempts), the free list, page 1. One
 * run a transaction wrote ~70 WAL frames a run, ~7 million (29 GB) to prune 100,000 runs, and each
 * of the pass's checkpoints (one per ~3,000 frames) makes the next commit restart the WAL, which
 * syncs its header under the write lock. So a transaction takes a batch of runs (run-batches.ts)
 * while two budgets allow: the time budget, at the time a run's check and mark and a batch's
 * deletion took so far (a slow or loaded machine takes fewer), and a frame budget, at the frames
 * a run wrote in the pass's last checkpoint cycle.
 *
 * A batch's deletion costs a fixed part (a statement per table, each searching its B-tree from
 * the root whatever the batch's size) and a part per run. Averaged per run with the fixed part in
 * it, a slow batch of one run made the next run look as dear as the whole batch, so the tempo took
 * one run a transaction from then on and never saw two (1.8 runs a transaction at 100,000 runs
 * against ~4 at 3,000). The tempo therefore fits the deletion's time to `fixed + perRun * runs`
 * over the recent batches (least squares, the older weighing less), and while the batches seen so
 * far were all of one size, so the two parts cannot be told apart, it takes one run more than the
 * last batch when that one left the time for another mark: a probe, whose time then tells them
 * apart.
 */
import type { PassCheckpoints } from "./pass-checkpoints.ts";

export interface PruneTempo {
  /** A run was checked and marked in `ms`. */
  marked(ms: number): void;
  /**
   * A batch of `runs` runs was deleted (after their marks) in `ms`, `workMs` after the BEGIN;
   * `cut`: the budget ended it first, so `ms` is the least it takes.
   */
  deleted(runs: number, ms: number, workMs: number, cut?: boolean): void;
  /** A transaction that deleted `runs` whole runs (and nothing else) ended. */
  committed(runs: number): void;
  /** The most runs the next transaction takes. */
  maxRuns(): number;
  /**
   * Whether one more run, marked and then deleted with the `marked` runs the transaction has
   * marked for its batch (0: a new batch), fits in the first half of the transaction's budget,
   * `elapsedMs` of it gone, at the times seen so far: on a loaded machine a run's wall time grows
   * with its waits for a CPU and a transaction takes one run, since a longer one is the likelier
   * to be preempted with the lock held (at load 11-15 on 2 cores, 2.7 runs a transaction held it
   * past 20 ms 2.5-3.8x as often as one); a quiet one takes several.
   */
  fits(elapsedMs: number, marked: number): boolean;
}

/** What the tempo reads of its pass. */
export interface TempoContext {
  readonly budgetMs: number;
  readonly transactionRuns: number;
  readonly transactionFrames: number;
  readonly checkpoints: Pick<PassCheckpoints, "lastCycle" | "lastTransactionFrames">;
}

/** Frames a run is taken to write until the pass has measured it (one run a transaction: ~70). */
const FIRST_FRAMES_PER_RUN = 70;
/** The weight of what came before, at each new batch (an outlier counts for little after ~10). */
const KEEP = 0.8;
/** The spread of batch sizes (their variance, weighted) from which the two parts are fitted. */
const MIN_SPREAD = 0.05;
/** A run's share of a batch's time is taken to be at least this part of the average share. */
const MIN_PER_RUN_SHARE = 0.1;

export function createPruneTempo(ctx: TempoContext): PruneTempo {
  /** ms one run's check and mark took (a moving average). */
  let markMs = 0;
  // Weighted sums over the batches: of 1, runs, runs², ms, runs * ms.
  let w = 0;
  let sn = 0;
  let snn = 0;
  let st = 0;
  let snt = 0;
  /** The batch's deletion time: `fixed + perRun * runs` (fitted after each batch). */
  let fixed = 0;
  let perRun = 0;
  /** Whether batches of more than one size were seen lately (the two parts are told apart). */
  let spread = false;
  /** The last batch's runs and whether its transaction left the time for one more mark. */
  let lastRuns = 0;
  let lastLeftTime = false;
  /** WAL frames a run's deletion wrote (a moving average); 0 until known. */
  let framesPerRun = 0;
  const framesSeen = (frames: number) => {
    framesPerRun = framesPerRun === 0 ? frames : 0.7 * framesPerRun + 0.3 * frames;
  };
  // Where the WAL cannot be read: the frames of the last checkpoint cycle over its runs.
  let cycleSeen = -1;
  let cycleRuns = 0;
  const half = ctx.budgetMs / 2;
  const fit = () => {
    const meanN = sn / w;
    const meanT = st / w;
    const average = meanT / meanN;
    const variance = snn / w - meanN * meanN;
    spread = variance >= MIN_SPREAD;
    const slope = spread ? (snt / w - meanN * meanT) / variance : average;
    perRun = Math.min(average, Math.max(MIN_PER_RUN_SHARE * average, slope));
    fixed = meanT - perRun * meanN;
  };
  return {
    marked(ms) {
      markMs = markMs === 0 ? ms : 0.8 * markMs + 0.2 * ms;
    },
    deleted(runs, ms, workMs, cut = false) {
      cycleRuns += runs;
      lastRuns = runs;
      lastLeftTime = workMs + markMs <= half;
      if (cut) {
        // A batch cut short took at least this. More than the fit expects of it: its time per
        // run is what the next batch is sized by (the fit starts over from it), not a point under
        // the line of the whole ones. Less tells nothing: a batch whose marks ran past the
        // deadline (preempted) stops after one statement.
        if (w > 0 && ms <= fixed + perRun * runs) return;
        w =
          sn =
          snn =
          st =
          snt =
            0;
      }
      w = KEEP * w + 1;
      sn = KEEP * sn + runs;
      snn = KEEP * snn + runs * runs;
      st = KEEP * st + ms;
      snt = KEEP * snt + runs * ms;
      fit();
    },
    committed(runs) {
      const frames = ctx.checkpoints.lastTransactionFrames();
      if (frames !== null && runs > 0) framesSeen(frames / runs);
    },
    maxRuns() {
      const cycle = ctx.checkpoints.lastCycle();
      if (cycle && cycle.n !== cycleSeen) {
        // The runs counted since the last look went in that cycle (a checkpoint is a step of its
        // own, between transactions).
        if (cycleRuns > 0 && ctx.checkpoints.lastTransactionFrames() === null) {
          framesSeen(cycle.frames / cycleRuns);
        }
        cycleSeen = cycle.n;
        cycleRuns = 0;
      }
      const byFrames = Math.floor(ctx.transactionFrames / (framesPerRun || FIRST_FRAMES_PER_RUN));
      return Math.max(1, Math.min(ctx.transactionRuns, byFrames));
    },
    fits(elapsedMs, marked) {
      if (elapsedMs + markMs + fixed + (marked + 1) * perRun <= half) return true;
      // The probe: one run past a batch that left time, while one size is all the fit has seen
      // lately, and only while this transaction has the time for one more mark itself.
      return !spread && lastLeftTime && marked === lastRuns && marked > 0 &&
        elapsedMs + markMs <= half;
    },
  };
}

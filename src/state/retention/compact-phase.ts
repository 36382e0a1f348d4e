/**
 * Compaction of the ended runs past the retry window (compaction.ts), runs per write
 * transaction within the step budget, then the viewer feed's trim from its front. A dry run
 * skips both (they delete nothing a run needs).
 */
import {
  compactRunInTx,
  type EndedRun,
  listUncompactedRuns,
  trimViewerFeedInTx,
} from "./compaction.ts";
import { type PassContext, type PassPhase, withinBudget } from "./pass-context.ts";
import { FEED_WINDOW_MS } from "./retention-policy.ts";

/** Runs listed per read. */
const PAGE = 256;
const FEED_CHUNK = 200;

export function createCompactPhase(ctx: PassContext): PassPhase {
  let queue: EndedRun[] = [];
  return {
    step() {
      if (ctx.dryRun) return true;
      if (queue.length === 0) {
        queue = listUncompactedRuns(ctx.store, ctx.receiptFloor, PAGE);
        if (queue.length === 0) return true;
      }
      ctx.transaction("compact", () => {
        const started = performance.now();
        do {
          compactRunInTx(ctx.store, queue.shift()!);
          ctx.report.compactedRuns++;
        } while (queue.length > 0 && performance.now() - started < ctx.budgetMs);
      });
      return false;
    },
  };
}

/** `onDone` runs once the feed is trimmed (the pass then counts the bytes it freed). */
export function createFeedPhase(ctx: PassContext, onDone: () => void): PassPhase {
  return {
    step() {
      if (ctx.dryRun) return true;
      const done = ctx.transaction("feed", () =>
        withinBudget(
          ctx,
          () => trimViewerFeedInTx(ctx.store, ctx.now - FEED_WINDOW_MS, FEED_CHUNK),
          FEED_CHUNK,
          (n) => {
            ctx.report.trimmedDeltas += n;
          },
        ));
      if (done) onDone();
      return done;
    },
  };
}

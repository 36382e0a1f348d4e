/**
 * The pass's last phase: the freed pages go back to the file (`auto_vacuum=INCREMENTAL`) in write
 * transactions bounded by the step budget (the pass then checkpoints, so the file's size shows it
 * and every commit of the pass is durable before the host removes the pruned runs' files).
 *
 * What one page costs: SQLite takes the file's last page off the free list by walking the list's
 * trunk pages from its head until it finds the page (each trunk scanned whole, ~1,000 entries),
 * and moves a page still in use into a free page below the final size, found by the same walk.
 * Pages freed first (the oldest runs, low in the file) lie at the list's tail, so a page costs up
 * to the whole list: after 100,000 pruned runs (~170 trunks) 256 pages took 25 ms of CPU in one
 * step, at 20,000 runs 5x less. A step therefore runs `incremental_vacuum` in chunks sized from
 * the cost per page seen so far, and stops when the budget is spent (at most `VACUUM_PAGES`).
 *
 * The pages a step moves come from the file's tail, which a cold cache holds nowhere: each read
 * would wait for the disk under the lock. Before each step the pass reads ahead, outside the lock,
 * twice the pages the last step returned (tail-read-ahead.ts).
 */
import { queryAllArgs } from "../statements.ts";
import { freePages, pragmaNumber } from "./database-pages.ts";
import type { PassContext, PassPhase } from "./pass-context.ts";
import { createTailReader } from "./tail-read-ahead.ts";

/** Pages one transaction returns at most (1 MiB of 4 KiB pages). */
const VACUUM_PAGES = 256;
/** Pages one `incremental_vacuum` call returns at most. */
const MAX_CHUNK = 8;
/** Pages read ahead of a step at least (a step's pages are a guess: twice the last step's). */
const READ_AHEAD_PAGES = 32;
/** The statement of each chunk size (prepared once: a step runs several). */
const VACUUM_SQL = Array.from(
  { length: MAX_CHUNK + 1 },
  (_, n) => `PRAGMA incremental_vacuum(${n})`,
);

export function createVacuumPhase(ctx: PassContext): PassPhase {
  // ms one page took, from the steps so far (the first chunk is one page).
  let msPerPage = ctx.budgetMs;
  const tail = createTailReader(ctx.store, VACUUM_PAGES);
  /** Pages the last step returned (the file's page count before it less after). */
  let returned = MAX_CHUNK;
  return {
    step() {
      if (ctx.dryRun || freePages(ctx.store) === 0) return true;
      tail.read(Math.max(READ_AHEAD_PAGES, 2 * returned));
      const pagesBefore = pragmaNumber(ctx.store, "page_count");
      ctx.transaction("vacuum", () => {
        const started = performance.now();
        let done = 0;
        for (;;) {
          const left = ctx.budgetMs - (performance.now() - started);
          // Half the budget left, at the cost per page seen: one slow page does not overrun it.
          const chunk = Math.max(1, Math.min(MAX_CHUNK, VACUUM_PAGES - done, left / 2 / msPerPage));
          // An unbounded budget (the benchmark's one-transaction baseline) sizes no chunk.
          const n = Number.isFinite(chunk) ? Math.floor(chunk) : MAX_CHUNK;
          const before = performance.now();
          // Stepped to its end: the pragma returns a row per page (`run()` would move one).
          queryAllArgs(ctx.store, VACUUM_SQL[n]);
          msPerPage = 0.5 * msPerPage + 0.5 * ((performance.now() - before) / n);
          done += n;
          if (done >= VACUUM_PAGES || performance.now() - started >= ctx.budgetMs) return;
          if (freePages(ctx.store) === 0) return;
        }
      });
      returned = Math.max(1, pagesBefore - pragmaNumber(ctx.store, "page_count"));
      return false;
    },
  };
}

/**
 * After the prune, what no run names any more: the definition snapshots no run or schedule uses,
 * then the client receipts of no run older than the period and the retry window. Chunks within
 * the step budget, one write transaction a step (a dry run counts instead).
 */
import { addRows } from "./run-deletion.ts";
import { countRunlessReceipts, pruneRunlessReceiptsInTx } from "./compaction.ts";
import {
  type DefinitionRow,
  listDefinitions,
  pruneUnusedDefinitionsInTx,
  wouldBeUnused,
} from "./unused-definitions.ts";
import { type PassContext, type PassPhase, withinBudget } from "./pass-context.ts";

const DEFINITIONS_CHUNK = 20;
/** Definition snapshots a dry run lists per read. */
const DEFINITIONS_PAGE = 64;
const RECEIPTS_CHUNK = 100;
/** A dry run's estimate of one client receipt's stored bytes. */
const RECEIPT_BYTES = 300;

export function createDefinitionsPhase(ctx: PassContext): PassPhase {
  const { report } = ctx;
  // A dry run's walk over the snapshots, within the step budget like a transaction.
  let after = "";
  let listed: DefinitionRow[] = [];
  return {
    step() {
      if (ctx.dryRun) {
        if (listed.length === 0) {
          listed = listDefinitions(ctx.store, after, DEFINITIONS_PAGE);
          if (listed.length === 0) return true;
          after = listed[listed.length - 1]!.digest;
        }
        const started = performance.now();
        do {
          const row = listed.shift()!;
          if (wouldBeUnused(ctx.store, row, ctx.countedByDigest.get(row.digest) ?? 0)) {
            addRows(ctx.report.rows, "workflow_definitions", 1);
            report.bytes += row.bytes;
          }
        } while (listed.length > 0 && performance.now() - started < ctx.budgetMs);
        return false;
      }
      return ctx.transaction("definitions", () => {
        // The prune's last deletions are told in the next phase's first transaction.
        if (ctx.unsignalledRuns() > 0) ctx.signalPruned();
        return withinBudget(
          ctx,
          () => pruneUnusedDefinitionsInTx(ctx.store, DEFINITIONS_CHUNK),
          DEFINITIONS_CHUNK,
          (n) => addRows(ctx.report.rows, "workflow_definitions", n),
        );
      });
    },
  };
}

export function createRunlessReceiptsPhase(ctx: PassContext): PassPhase {
  const before = Math.min(ctx.cutoff, ctx.receiptFloor);
  return {
    step() {
      if (ctx.dryRun) {
        const n = countRunlessReceipts(ctx.store, before);
        addRows(ctx.report.rows, "host_commands", n);
        ctx.report.bytes += n * RECEIPT_BYTES;
        return true;
      }
      return ctx.transaction("receipts", () =>
        withinBudget(
          ctx,
          () => pruneRunlessReceiptsInTx(ctx.store, before, RECEIPTS_CHUNK),
          RECEIPTS_CHUNK,
          (n) => addRows(ctx.report.rows, "host_commands", n),
        ));
    },
  };
}

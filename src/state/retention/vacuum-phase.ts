/**
 * The pass's last phase: the freed pages go back to the file (`auto_vacuum=INCREMENTAL`), a
 * bounded number per write transaction, then a passive checkpoint so the file's size shows it.
 */
import { fileBytes, freePages } from "./database-pages.ts";
import type { PassContext, PassPhase } from "./pass-context.ts";

/** Pages one incremental vacuum step returns to the file (1 MiB of 4 KiB pages). */
const VACUUM_PAGES = 256;

export function createVacuumPhase(ctx: PassContext): PassPhase {
  return {
    step() {
      if (ctx.dryRun || freePages(ctx.store) === 0) {
        if (!ctx.dryRun) ctx.store.db.exec("PRAGMA wal_checkpoint(PASSIVE)");
        ctx.report.fileBytesAfter = fileBytes(ctx.store);
        return true;
      }
      ctx.transaction(
        "vacuum",
        () => ctx.store.db.exec(`PRAGMA incremental_vacuum(${VACUUM_PAGES})`),
      );
      return false;
    },
  };
}

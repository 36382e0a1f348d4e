/**
 * The budget of captured worker output (`<stateDir>/workers/<epoch>.out|err`, written by the
 * child kit's supervision/children/captured-output.ts): the files and bytes kept across epochs
 * and host restarts, oldest removed first, never a live child's. File retention, like the
 * retention runner's removal of a deleted run's files; it starts, watches and stops no process.
 */
import { readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { HostContext } from "./host-context.ts";
import { capturedNow } from "./supervision/children/captured-output.ts";

/** Captured output files kept across host restarts (newest first). */
const KEPT_WORKER_LOGS = 200;

/**
 * Keeps the captured output within its file count and byte budget. The files a child of any
 * kind still writes (captured-output.ts) are never pruned.
 */
export function pruneLogs(ctx: Pick<HostContext, "stateDir" | "options">): void {
  pruneWorkerLogs(join(ctx.stateDir, "workers"), {
    keep: KEPT_WORKER_LOGS,
    maxBytes: ctx.options.maxWorkerLogsMb * 1024 * 1024,
    inUse: capturedNow(),
  });
}

/**
 * Keeps the captured output in `logDir` within `keep` files and `maxBytes` in all, removing the
 * oldest first and never a file in `inUse` (a live child's). Returns how many files it removed.
 */
function pruneWorkerLogs(
  logDir: string,
  limits: { keep: number; maxBytes: number; inUse: ReadonlySet<string> },
): number {
  let files: { path: string; mtime: number; size: number }[];
  try {
    files = readdirSync(logDir)
      .filter((name) => name.endsWith(".out") || name.endsWith(".err"))
      .flatMap((name) => {
        const path = join(logDir, name);
        try {
          const stat = statSync(path);
          return [{ path, mtime: stat.mtimeMs, size: stat.size }];
        } catch {
          return [];
        }
      });
  } catch {
    return 0;
  }
  files.sort((a, b) => b.mtime - a.mtime);
  let kept = 0;
  let bytes = 0;
  let removed = 0;
  for (const file of files) {
    if (limits.inUse.has(file.path)) {
      bytes += file.size;
      kept++;
      continue;
    }
    if (kept < limits.keep && bytes + file.size <= limits.maxBytes) {
      bytes += file.size;
      kept++;
      continue;
    }
    try {
      rmSync(file.path);
      removed++;
    } catch {
      // raced with another removal
    }
  }
  return removed;
}

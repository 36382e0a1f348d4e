/**
 * The budget of captured worker output (`<stateDir>/workers/<epoch>.out|err`, written by the
 * child kit's supervision/children/captured-output.ts): the files and bytes kept across epochs
 * and host restarts, oldest removed first, never a live child's. File retention, like the
 * retention runner's removal of a deleted run's files; it starts, watches and stops no process.
 */
import { readdirSync, rmSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { epochLogStem, stepOutputStem } from "../base/step-output-files.ts";
import type { HostContext } from "./host-context.ts";
import { capturedNow } from "./supervision/children/captured-output.ts";

/** Captured output files kept across host restarts (newest first). */
const KEPT_WORKER_LOGS = 200;

/** A run worker still live: its epoch and the attempt it runs, whose files it still writes. */
export interface LiveRunOutput {
  workerEpoch: string;
  openAttempt: { attemptId: string } | null;
}

/**
 * Keeps the captured output within its file count and byte budget. Never pruned: the files a
 * child of any kind still writes (captured-output.ts), and those a live run worker writes itself
 * beside them (its headless Pi's output tails, its open attempt's step output segments).
 */
export function pruneLogs(
  ctx: Pick<HostContext, "stateDir" | "options">,
  live: Iterable<LiveRunOutput> = [],
): void {
  const captured = capturedNow();
  const prefixes: string[] = [];
  for (const worker of live) {
    prefixes.push(`${epochLogStem(worker.workerEpoch)}-pi`);
    if (worker.openAttempt) prefixes.push(`${stepOutputStem(worker.openAttempt.attemptId)}.`);
  }
  pruneWorkerLogs(join(ctx.stateDir, "workers"), {
    keep: KEPT_WORKER_LOGS,
    maxBytes: ctx.options.maxWorkerLogsMb * 1024 * 1024,
    inUse: (path) =>
      captured.has(path) || prefixes.some((prefix) => basename(path).startsWith(prefix)),
  });
}

/**
 * Keeps the captured output in `logDir` within `keep` files and `maxBytes` in all, removing the
 * oldest first and never a file `inUse` says is live. Returns how many files it removed.
 */
function pruneWorkerLogs(
  logDir: string,
  limits: { keep: number; maxBytes: number; inUse: (path: string) => boolean },
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
    if (limits.inUse(file.path)) {
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

/**
 * The host's retention passes (state/retention/): one at a time, stepped one short write
 * transaction at a time with the event loop free in between, so commands interleave with a
 * prune and no transaction of it holds the write lock for more than a few milliseconds.
 *
 * After a pass, the deleted runs' files go too: captured worker output, step output and headless
 * Pi sessions, and the session directories of runs an earlier pass deleted but could not finish
 * (an idle exit or a crash cut it short; the captured output is bounded by the log budget anyway).
 *
 * - `prune(options)`: the `host.prune` command, to completion (an idle pass in progress is
 *   dropped first: the command's pass does all of its work).
 * - `idleTick()`: called from the host's idle check while no client, worker, wake or work keeps
 *   it busy. At most once per interval it starts a pass at the configured period and steps it
 *   for a few milliseconds per tick; it never makes the host busy, so the idle exit is delayed
 *   by one tick's slice at most, and a pass cut short by the exit is redone next time (each of
 *   its transactions left every run whole, marked or gone).
 */
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { parseUserConfig } from "../protocol/user-config.ts";
import { readUserConfigText } from "../os/user-config-file.ts";
import {
  createRetentionPass,
  DEFAULT_KEEP_DAYS,
  type RetentionPass,
  type RetentionReport,
} from "../state/retention/retention-pass.ts";
import type { StateStore } from "../state/store.ts";
import type { CheckpointRunner } from "../state/checkpoint-runner.ts";
import { runsNotStored } from "../state/retention/missing-runs.ts";
import {
  COMMANDED_CHECKPOINT_FRAMES,
  COMMANDED_HOST_AUTOCHECKPOINT,
  raiseAutocheckpoint,
} from "../state/retention/pass-checkpoints.ts";
import { readLastPassAt, recordPassEnd } from "../state/retention/pass-record.ts";
import type { HostLog } from "./host-log.ts";
import { crashPoint } from "../base/crash-point.ts";
import { type OutputFileIndex, outputFileIndex } from "./output-file-index.ts";

/**
 * The pause between two steps of a commanded pass (ms). The thread sleeps in it (a timer, not
 * `setImmediate`), so on a loaded machine the next transaction starts on a fresh scheduler
 * slice instead of being preempted midway: at load 18-20 on 2 cores (2,000 runs) a prune
 * transaction over 20 ms went from 98 to 19 and the longest from 112 to 42 ms, the pass took
 * 22% longer. Commands interleave in it as before.
 */
export const STEP_GAP_MS = 1;

/** Work an idle tick does before it gives the event loop back (ms). */
const IDLE_SLICE_MS = 15;

export interface RetentionRunner {
  prune(options: { keepDays?: number; dryRun?: boolean }): Promise<RetentionReport>;
  idleTick(): void;
  /** A stopping host: the idle pass takes no further step (one queued, or a checkpoint's end). */
  stop(): void;
}

export class RetentionConfigError extends Error {}

export function createRetentionRunner(ctx: {
  store: StateStore;
  stateDir: string;
  log: HostLog;
  intervalMs: number;
  now(): number;
  /** Runs the passes' checkpoints off the event loop (none: in line). */
  checkpointRunner?: CheckpointRunner;
  /**
   * The host has work in hand (a client, a worker): an idle pass waits for the next quiet tick
   * instead of going on after its checkpoint.
   */
  working?(): boolean;
}): RetentionRunner {
  const settings = ctx.checkpointRunner ? { checkpointRunner: ctx.checkpointRunner } : {};
  let idlePass: RetentionPass | null = null;
  // A step of the idle slice is queued (setImmediate): an idle tick meanwhile starts no second one.
  let sliceGoesOn = false;
  let stopped = false;
  /** Null until the first idle tick reads when the last pass (of any host) ended. */
  let nextIdleAt: number | null = null;
  let commanded: Promise<RetentionReport> | null = null;

  const sessions = join(ctx.stateDir, "sessions");
  /** Each pass's listing of the workers directory (one per pass, not one per hand-over). */
  const outputs = new WeakMap<RetentionPass, OutputFileIndex>();
  /** Removes the files of the runs whose deletion the pass made durable since the last call. */
  const removePruned = (pass: RetentionPass, orphans: readonly string[] = []): void => {
    const files = pass.takePruned();
    let index = outputs.get(pass);
    if (!index) outputs.set(pass, index = outputFileIndex(join(ctx.stateDir, "workers")));
    index.remove(files.epochs, files.attempts);
    removeSessionDirs(sessions, [...files.runs, ...orphans]);
  };

  const finish = (pass: RetentionPass, source: string): void => {
    const r = pass.report;
    if (r.dryRun) return;
    // With those of runs an earlier pass deleted but could not finish (an idle exit, a crash).
    removePruned(pass, orphanSessionDirs(ctx.store, sessions));
    // The next host's idle pass waits the interval from here (a failure: it runs sooner).
    try {
      recordPassEnd(ctx.store, ctx.now());
      nextIdleAt = ctx.now() + ctx.intervalMs;
    } catch (error) {
      ctx.log("retention.failed", { error: (error as Error).message.split("\n")[0] });
    }
    ctx.log("retention.pass", {
      source,
      runs: r.runs,
      compactedRuns: r.compactedRuns,
      trimmedDeltas: r.trimmedDeltas,
      bytes: r.bytes,
      fileBytesBefore: r.fileBytesBefore,
      fileBytesAfter: r.fileBytesAfter,
      transactions: r.transactions,
      longestLockMs: Math.round(r.longestLockMs * 100) / 100,
      // Where its checkpoints ran at its end: on their thread, or the event loop's (a runtime
      // without worker threads, or a thread that failed: checkpoint.threadFailed says why).
      checkpoints: ctx.checkpointRunner?.offThread ? "thread" : "inline",
      // Rows deleted per table (counts only), a field each: one list could pass the log's bound.
      ...Object.fromEntries(
        Object.entries(r.rows).sort(([a], [b]) => a < b ? -1 : 1).map(([table, n]) => [
          `rows.${table}`,
          n,
        ]),
      ),
    });
  };

  const step = (pass: RetentionPass): boolean => {
    const more = pass.step();
    if (more) removePruned(pass);
    // Crash tests: the host dies between two of the pass's transactions.
    crashPoint("host.retention.step");
    return more;
  };

  return {
    prune(options) {
      const run = async () => {
        // A real pass replaces the idle one; a dry run leaves it to go on after.
        if (!options.dryRun) idlePass = null;
        const keepDays = options.keepDays ?? configuredKeepDays(ctx.stateDir);
        // Fewer, larger checkpoint cycles than the idle pass's (pass-checkpoints.ts), with the
        // host's own automatic checkpoint above them until the pass ends, however it ends.
        const restore = options.dryRun
          ? () => {}
          : raiseAutocheckpoint(ctx.store, COMMANDED_HOST_AUTOCHECKPOINT);
        let pass: RetentionPass;
        try {
          pass = createRetentionPass(ctx.store, {
            keepDays,
            dryRun: options.dryRun,
            checkpointFrames: COMMANDED_CHECKPOINT_FRAMES,
            ...settings,
          });
          while (step(pass)) {
            await (pass.waiting() ?? new Promise((resolve) => setTimeout(resolve, STEP_GAP_MS)));
          }
        } finally {
          restore();
        }
        finish(pass, "command");
        return pass.report;
      };
      // Two commands at once share nothing: the second runs after the first.
      const next = (commanded ?? Promise.resolve()).catch(() => {}).then(run);
      commanded = next;
      return next.finally(() => {
        if (commanded === next) commanded = null;
      });
    },
    stop() {
      stopped = true;
      idlePass = null;
    },
    idleTick() {
      if (commanded || stopped) return;
      let keepDays: number | null = null;
      if (!idlePass) {
        if (nextIdleAt === null) {
          try {
            // A time past now (the clock was set back) counts as now.
            const last = readLastPassAt(ctx.store);
            nextIdleAt = last === null ? 0 : Math.min(last, ctx.now()) + ctx.intervalMs;
          } catch (error) {
            nextIdleAt = ctx.now() + ctx.intervalMs;
            failed(error);
            return;
          }
        }
        if (ctx.now() < nextIdleAt) return;
        nextIdleAt = ctx.now() + ctx.intervalMs;
        try {
          keepDays = configuredKeepDays(ctx.stateDir);
        } catch (error) {
          ctx.log("retention.skipped", { reason: (error as Error).message });
          return;
        }
      }
      try {
        // Opening a pass writes (a checkpoint), so it is inside the guard like every step: an
        // error thrown from this timer (a full disk) would end the host.
        if (keepDays !== null) idlePass = createRetentionPass(ctx.store, { keepDays, ...settings });
      } catch (error) {
        failed(error);
      }
      // A pass whose checkpoint is running, or whose slice is under way, goes on by itself.
      if (idlePass && !idlePass.waiting() && !sliceGoesOn) idleSlice(idlePass);
    },
  };

  /** A busy or failing database: try again at the next interval. */
  function failed(error: unknown): void {
    ctx.log("retention.failed", { error: (error as Error).message.split("\n")[0] });
    idlePass = null;
  }

  /**
   * The idle pass goes on: still the runner's, no command's pass, no work in the host's hands, and
   * the store still open (a stopping host closes it while a step or a checkpoint's end is queued).
   */
  function idleGoesOn(pass: RetentionPass): boolean {
    return idlePass === pass && !commanded && !ctx.working?.() && ctx.store.db.isOpen;
  }

  /**
   * A few milliseconds of the idle pass, a step a turn of the event loop (`setImmediate`): V8's
   * posted work (a scavenge, the end of an incremental marking) runs between two transactions
   * instead of inside the next one's allocations. A checkpoint on the runner's thread ends the
   * slice, and the next one starts when it is done, not a whole idle tick later: a pass has a
   * checkpoint at each end at least, and one per tick made even a small pass outlast a short idle
   * exit.
   */
  function idleSlice(pass: RetentionPass, started = performance.now()): void {
    try {
      // Also when the slice's last step started the checkpoint: its end goes on at once.
      const waiting = pass.waiting();
      if (waiting) {
        void waiting.then(() => {
          if (idleGoesOn(pass)) idleSlice(pass);
        });
        return;
      }
      if (performance.now() - started >= IDLE_SLICE_MS) return;
      if (!step(pass)) {
        finish(pass, "idle");
        idlePass = null;
        return;
      }
      sliceGoesOn = true;
      setImmediate(() => {
        sliceGoesOn = false;
        if (idleGoesOn(pass)) idleSlice(pass, started);
      });
    } catch (error) {
      failed(error);
    }
  }
}

/** `retention.days` of config.json, else the default. Throws `RetentionConfigError`. */
export function configuredKeepDays(stateDir: string): number {
  const read = parseUserConfig(readUserConfigText(stateDir));
  if (!read.ok) throw new RetentionConfigError(read.message);
  return read.config.retention?.days ?? DEFAULT_KEEP_DAYS;
}

/** Run ids are the host's own; a name that could leave the directory is never one. */
const RUN_DIR_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/** The session directories (`sessions/<runId>/`) of runs the database no longer has. */
function orphanSessionDirs(store: StateStore, dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => RUN_DIR_NAME.test(name));
  } catch {
    return [];
  }
  return runsNotStored(store, names);
}

/** Removes the headless Pi conversations of the deleted runs (`sessions/<runId>/`). */
function removeSessionDirs(dir: string, runIds: readonly string[]): void {
  for (const runId of runIds) {
    if (!RUN_DIR_NAME.test(runId)) continue;
    try {
      rmSync(join(dir, runId), { recursive: true, force: true });
    } catch {
      // gone or not ours to remove: the next pass does not look again
    }
  }
}

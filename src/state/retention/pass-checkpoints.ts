/**
 * The pass's WAL checkpoints, out of its write transactions. SQLite checkpoints from inside the
 * COMMIT that takes the WAL past `wal_autocheckpoint` frames, with the write lock still held:
 * the WAL's pages are copied into the database file and both files synced, which on a busy
 * disk held a prune transaction's lock for 150 ms. A pass's transactions therefore run with
 * automatic checkpoints off, and the pass checkpoints itself as a step of its own once its
 * transactions have written about `checkpointFrames` WAL frames: passive (it takes no write lock
 * and waits for no reader), so the host serves between it and the transactions. The WAL stays
 * bounded (the host's own commits keep their automatic checkpoints, and the pass's come long
 * before the WAL reaches that threshold), and every checkpoint ends with an fsync of the WAL, which
 * makes the pass's unsynced commits durable (pass-transaction.ts). The host gives the pass a
 * checkpoint runner, so the checkpoints run on a thread of their own and its event loop serves
 * meanwhile (checkpoint-runner.ts); the pass waits for each before its next transaction.
 */
import { type StateStore, WAL_AUTOCHECKPOINT_FRAMES } from "../store.ts";
import {
  checkpointHere,
  type CheckpointResult,
  type CheckpointRunner,
} from "../checkpoint-runner.ts";
import { pragmaNumber } from "./database-pages.ts";
import { framesBetween, readWalPosition, type WalPosition } from "./wal-frames.ts";

/**
 * WAL frames (pages) written between two of the pass's checkpoints (~12 MiB). The first commit
 * after a complete checkpoint starts the WAL over and syncs its new header under the write lock
 * (even at `synchronous=NORMAL`): one fsync under the lock per checkpoint, so not too often (a
 * disk busy with other work held that fsync 28-42 ms). Below the host's own
 * `WAL_AUTOCHECKPOINT_FRAMES` (4,000), which would checkpoint inside a host commit: the pass reads
 * the WAL's frames before each step (wal-frames.ts), so it passes this by one transaction at most
 * (a prune's ~500 frames, a vacuum step's up to a few hundred); and within the WAL-index's first
 * hash table (4,062 frames), so a reader's page lookup costs what it did.
 */
export const CHECKPOINT_FRAMES = 3_000;

/**
 * WAL frames between two checkpoints of a commanded pass (`pi-workflows prune`), four times the
 * idle pass's: a quarter of the WAL restarts, each one fsync of the new header under the lock of
 * the write after it, most often the pass's next transaction. That fsync stalls on a busy disk as
 * often as any (the host's own synced commits alike: 6 of 400 over 20 ms at load 2-4 on this
 * machine, 2026-12-07), and it was the longest hold of a quiet 100,000-run prune (105.9 ms of
 * 113.2; one of ~1,700 restarts). A cycle copies its pages once however often the pass wrote
 * them, so the pass copies no more in all. What it costs: a WAL of up to ~50 MB while the pass runs
 * (four WAL-index hash tables, a reader's page lookup a probe of each) and read whole at the next
 * open after a crash, and the host's own commits checkpoint at `COMMANDED_HOST_AUTOCHECKPOINT`
 * meanwhile (`raiseAutocheckpoint`). The idle pass keeps `CHECKPOINT_FRAMES`: it pauses whenever
 * the host has work, and the host's first commit then would checkpoint a WAL that large in line.
 */
export const COMMANDED_CHECKPOINT_FRAMES = 12_000;

/**
 * The host's automatic checkpoint while a commanded pass runs: above the pass's interval by the
 * host's own (4,000 frames), so the pass's checkpoints come first (a host commit crossing it would
 * checkpoint in line, on the event loop) and a pass whose checkpoints stop still leaves a bound.
 */
export const COMMANDED_HOST_AUTOCHECKPOINT = COMMANDED_CHECKPOINT_FRAMES +
  WAL_AUTOCHECKPOINT_FRAMES;

/**
 * Raises the connection's automatic checkpoint to `frames` while a pass checkpoints at intervals
 * above the host's own (a no-op where it is off or higher); the returned function puts it back.
 * The WAL file keeps its largest size (~50 MB after a commanded pass) until the host's last
 * connection closes and removes it: having SQLite cut it back (`journal_size_limit`) truncates it
 * inside the next restarting commit, under the write lock, and that commit took 34-56 ms against
 * 4-8 ms without the cut (12,000 frames, load 17-19, 2026-12-07).
 */
export function raiseAutocheckpoint(store: StateStore, frames: number): () => void {
  const host = pragmaNumber(store, "wal_autocheckpoint");
  if (host <= 0 || host >= frames) return () => {};
  store.db.exec(`PRAGMA wal_autocheckpoint = ${frames}`);
  return () => {
    if (store.db.isOpen) store.db.exec(`PRAGMA wal_autocheckpoint = ${host}`);
  };
}

export interface PassCheckpoints {
  /** Runs `fn`, one write transaction of the pass, with automatic checkpoints off. */
  around<T>(fn: () => T): T;
  /**
   * True when the WAL holds `checkpointFrames` frames written since the last checkpoint (read
   * from its WAL-index header, wal-frames.ts); where that cannot be read, when the pass's
   * transactions since then wrote about as many, at the frames per transaction the checkpoints
   * found so far.
   */
  due(): boolean;
  /** The WAL frames the pass's last transaction wrote; null when they cannot be read. */
  lastTransactionFrames(): number | null;
  /**
   * The last checkpoint cycle with transactions of the pass: its number (counting from 0), the
   * WAL frames written in it and its transactions. Null before the first.
   */
  lastCycle(): { n: number; frames: number; transactions: number } | null;
  /**
   * A passive checkpoint and an fsync of the WAL (outside any transaction): on the checkpoint
   * runner's thread when the pass has a runner (the promise settles once it ended), else here
   * (null: it has ended). Either way every commit of the pass before it is then durable.
   */
  run(): Promise<void> | null;
}

export function createPassCheckpoints(
  store: StateStore,
  options: {
    checkpointFrames?: number;
    /**
     * Told each checkpoint's length (where it ran), the WAL frames it found, and the time the
     * host's thread spent on it: all of it here, only the hand-over with a runner (the benchmark).
     */
    onCheckpoint?: (ms: number, frames: number, threadMs: number) => void;
    /** Runs the checkpoints off the host's thread (checkpoint-runner.ts); else they run here. */
    checkpointRunner?: CheckpointRunner;
  },
): PassCheckpoints {
  const target = options.checkpointFrames ?? CHECKPOINT_FRAMES;
  const autocheckpoint = pragmaNumber(store, "wal_autocheckpoint");
  // Transactions between checkpoints, adapted to the frames each checkpoint finds (the
  // transactions' sizes differ by phase: a prune of several runs, a vacuum step of 256 pages).
  // The first cycle's guess: four transactions of a prune's frame budget (~2,000 frames).
  let every = 4;
  let since = 0;
  let cycle: { n: number; frames: number; transactions: number } | null = null;
  // The WAL's frames at the last checkpoint, when a reader kept it from copying them all (the
  // WAL then grows on instead of starting over).
  let leftFrames = 0;
  /**
   * The WAL's position when the last checkpoint ended. The frames since then are counted from it
   * whether or not that checkpoint copied every frame: one a reader held back leaves the WAL to
   * grow on (its frames are not all new), and counting all of them would call for a checkpoint,
   * with its fsync, after every transaction until the reader let one complete.
   */
  let checkpointedAt: WalPosition | null = null;
  let lastFrames: number | null = null;
  const settle = (result: CheckpointResult): void => {
    checkpointedAt = readWalPosition(store.path);
    // The pass's opening checkpoint (no transaction yet) tells nothing of its transactions.
    if (since === 0) return;
    const log = result.log;
    const written = Math.max(1, log >= leftFrames ? log - leftFrames : log);
    leftFrames = result.checkpointed < log ? log : 0;
    every = Math.max(1, Math.min(10_000, Math.round((since * target) / written)));
    cycle = { n: (cycle?.n ?? -1) + 1, frames: written, transactions: since };
    since = 0;
  };
  return {
    around(fn) {
      since++;
      const before = readWalPosition(store.path);
      lastFrames = null;
      const off = autocheckpoint > 0;
      if (off) store.db.exec("PRAGMA wal_autocheckpoint = 0");
      try {
        return fn();
      } finally {
        if (off) store.db.exec(`PRAGMA wal_autocheckpoint = ${autocheckpoint}`);
        const after = before && readWalPosition(store.path);
        lastFrames = before && after ? framesBetween(before, after) : null;
      }
    },
    due() {
      // Only the pass's own transactions call for its checkpoints (a dry run has none).
      if (since === 0) return false;
      const now = readWalPosition(store.path);
      if (now === null) return since >= every;
      // Frames since the last checkpoint (all of them once the WAL started over); all it holds
      // before the pass's first.
      return (checkpointedAt ? framesBetween(checkpointedAt, now) : now.frames) >= target;
    },
    lastTransactionFrames: () => lastFrames,
    lastCycle: () => cycle,
    run() {
      const runner = options.checkpointRunner;
      if (!runner) {
        const result = checkpointHere(store);
        settle(result);
        options.onCheckpoint?.(result.ms, result.log, result.ms);
        return null;
      }
      const handOver = performance.now();
      const started = runner.checkpoint();
      const handOverMs = performance.now() - handOver;
      return started.then((result) => {
        const settled = performance.now();
        settle(result);
        // The host's thread spent the hand-over and this, and the checkpoint itself when the
        // thread failed and it ran here.
        const threadMs = handOverMs + (performance.now() - settled) +
          (result.on === "host" ? result.ms : 0);
        options.onCheckpoint?.(result.ms, result.log, threadMs);
      });
    },
  };
}

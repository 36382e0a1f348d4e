/**
 * The pass's WAL checkpoints, out of its write transactions. SQLite checkpoints from inside the
 * COMMIT that takes the WAL past `wal_autocheckpoint` frames, with the write lock still held:
 * the WAL's pages are copied into the database file and both files synced, which on a busy
 * disk held a prune transaction's lock for 150 ms. A pass's transactions therefore run with
 * automatic checkpoints off, and the pass checkpoints itself as a step of its own once its
 * transactions have written about `checkpointFrames` WAL frames: passive (it takes no write lock
 * and waits for no reader), so the host serves between it and the transactions. The WAL stays
 * bounded (the host's own commits keep their automatic checkpoints, and the pass's come long
 * before the WAL reaches that threshold), and every checkpoint syncs the WAL first, which also
 * makes the pass's unsynced commits durable (pass-transaction.ts).
 */
import type { StateStore } from "../store.ts";
import { queryOneArgs } from "../statements.ts";
import { pragmaNumber } from "./database-pages.ts";

/**
 * WAL frames (pages) the pass writes between two of its checkpoints (~8 MiB). The first commit
 * after a complete checkpoint starts the WAL over and syncs its new header under the write lock
 * (even at `synchronous=NORMAL`): one fsync under the lock per checkpoint, so not too often; and
 * well below the host's own `WAL_AUTOCHECKPOINT_FRAMES` (4,000), which would checkpoint inside a
 * host commit.
 */
export const CHECKPOINT_FRAMES = 2_000;

export interface PassCheckpoints {
  /** Runs `fn`, one write transaction of the pass, with automatic checkpoints off. */
  around<T>(fn: () => T): T;
  /** True when the pass's transactions since the last checkpoint wrote enough frames. */
  due(): boolean;
  /**
   * A passive checkpoint (outside any transaction). True when it copied every frame of the WAL
   * into the database file, which it synced: every commit so far is durable.
   */
  run(): boolean;
}

export function createPassCheckpoints(
  store: StateStore,
  options: {
    checkpointFrames?: number;
    /** Told each checkpoint's length and the WAL frames it found (the benchmark). */
    onCheckpoint?: (ms: number, frames: number) => void;
  },
): PassCheckpoints {
  const target = options.checkpointFrames ?? CHECKPOINT_FRAMES;
  const autocheckpoint = pragmaNumber(store, "wal_autocheckpoint");
  // Transactions between checkpoints, adapted to the frames each checkpoint finds (the
  // transactions' sizes differ by phase: a run's deletion, a vacuum step of 256 pages).
  let every = 8;
  let since = 0;
  // The WAL's frames at the last checkpoint, when a reader kept it from copying them all (the
  // WAL then grows on instead of starting over).
  let leftFrames = 0;
  return {
    around(fn) {
      since++;
      if (autocheckpoint <= 0) return fn();
      store.db.exec("PRAGMA wal_autocheckpoint = 0");
      try {
        return fn();
      } finally {
        store.db.exec(`PRAGMA wal_autocheckpoint = ${autocheckpoint}`);
      }
    },
    due: () => since >= every,
    run() {
      const started = performance.now();
      const row = queryOneArgs<{ busy: number; log: number; checkpointed: number }>(
        store,
        "PRAGMA wal_checkpoint(PASSIVE)",
      );
      const log = row?.log ?? 0;
      const written = Math.max(1, log >= leftFrames ? log - leftFrames : log);
      leftFrames = row && row.checkpointed < log ? log : 0;
      every = Math.max(1, Math.min(10_000, Math.round((since * target) / written)));
      since = 0;
      options.onCheckpoint?.(performance.now() - started, log);
      return row !== undefined && row.busy === 0 && log >= 0 && row.checkpointed === log;
    },
  };
}

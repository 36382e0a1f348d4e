/**
 * What the checkpoint thread runs (checkpoint-runner.ts starts it): a connection of its own to
 * the state file that, on each request, runs a passive WAL checkpoint and then an fsync of the
 * WAL, and answers with SQLite's counts.
 *
 * The thread starts from source text (`new Worker(source, { eval: true })`), not from a file:
 * the single executable has no file of its code to start a thread from (its bundles are embedded
 * assets), and the npm bundle and the source tree would each need an entry of their own. So the
 * two functions below are self-contained: they use only their arguments and what they take from
 * `globalThis.process.getBuiltinModule`, never an import or anything else of this module (a
 * bundler renames imported names, and the text is all the thread gets). The same text runs under
 * Node, in the executable and under Deno; checkpoint-runner.test.ts runs it.
 */
import type { DatabaseSync } from "node:sqlite";

/** `PRAGMA wal_checkpoint`'s answer: busy (1 when it could not finish), WAL frames, frames copied. */
export interface CheckpointCounts {
  busy: number;
  log: number;
  checkpointed: number;
}

/**
 * A passive checkpoint (no write lock, waits for no reader), then, unless it copied every frame
 * into the database file (which it synced), an fsync of the WAL: a reader can hold frames back,
 * and the commits a retention pass made unsynced must be durable before the host removes the
 * pruned runs' files. Self-contained (see
 * above): the checkpoint thread runs it from its text, and the host's thread runs it when the
 * thread cannot.
 */
export function checkpointAndSync(db: DatabaseSync, walPath: string): CheckpointCounts {
  const fs = globalThis.process.getBuiltinModule("node:fs");
  const passive = () =>
    db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get() as
      | Record<string, number | bigint>
      | undefined;
  let row = passive();
  // Commits made while it copied (the host's own writes beside a retention pass's checkpoint)
  // lie past the frames it saw: once more copies them (few), else the WAL cannot start over at
  // the next write and grows past the pass's checkpoint interval until a host commit checkpoints
  // in line, under its own write lock. Where nothing came meanwhile it finds nothing to do.
  const again = passive();
  if (Number(again?.log ?? 0) > Number(row?.log ?? 0)) row = again;
  const counts = {
    busy: Number(row?.busy ?? 0),
    log: Number(row?.log ?? 0),
    checkpointed: Number(row?.checkpointed ?? 0),
  };
  // A complete checkpoint synced the file with every commit in it: no fsync of the WAL.
  if (counts.busy === 0 && counts.log >= 0 && counts.checkpointed === counts.log) return counts;
  let fd: number;
  try {
    fd = fs.openSync(walPath, "r");
  } catch {
    return counts; // no WAL: every commit is in the database file, which the checkpoint synced
  }
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return counts;
}

/** A request to the thread: its id. The answer: `CheckpointAnswer`. */
export type CheckpointAnswer =
  | ({ id: number; ms: number } & CheckpointCounts)
  | { id: number; error: string };

/** What the thread is started with (`workerData`). */
export interface CheckpointThreadData {
  path: string;
  walPath: string;
  /** macOS: `checkpoint_fullfsync`, as the host's own connection (store.ts). */
  fullfsync: boolean;
}

/** The thread's main; self-contained (see above). */
function checkpointThreadMain(checkpoint: typeof checkpointAndSync): void {
  const process = globalThis.process;
  // The thread has nothing to tell a user: Node 22 would print that node:sqlite is experimental
  // (the CLI hides that notice on the main thread; a thread has its own `process`).
  process.removeAllListeners("warning");
  const { parentPort, workerData } = process.getBuiltinModule("node:worker_threads");
  const { DatabaseSync } = process.getBuiltinModule("node:sqlite");
  const data = workerData as CheckpointThreadData;
  const db = new DatabaseSync(data.path);
  // A checkpoint syncs the WAL and the database file at the checkpointing connection's setting.
  db.exec("PRAGMA synchronous = FULL");
  if (data.fullfsync) db.exec("PRAGMA checkpoint_fullfsync = ON");
  parentPort!.on("message", (id: number) => {
    const started = performance.now();
    let answer: CheckpointAnswer;
    try {
      answer = { id, ...checkpoint(db, data.walPath), ms: performance.now() - started };
    } catch (error) {
      answer = { id, error: String((error as Error)?.message ?? error).split("\n")[0]! };
    }
    parentPort!.postMessage(answer);
  });
}

/** The thread's source text: its main, given the checkpoint. */
export const CHECKPOINT_THREAD_SOURCE =
  `(${checkpointThreadMain.toString()})(${checkpointAndSync.toString()});`;

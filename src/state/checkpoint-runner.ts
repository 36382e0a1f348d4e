/**
 * WAL checkpoints off the host's thread. A checkpoint copies the WAL's pages into the database
 * file and syncs both: 23 ms at the median and up to 80 ms on a quiet machine (hundreds under
 * load), all of it with the host's event loop stopped when its own connection runs it, so a
 * command arriving while the host prunes waited behind it. The runner runs each checkpoint on a
 * thread of its own (node:worker_threads) with a connection of its own to the same file
 * (checkpoint-thread.ts) and the caller awaits the answer. WAL mode lets any connection
 * checkpoint: the thread takes no write lock and the host's connection keeps committing.
 *
 * Failures: a thread that dies, cannot open the file, or does not answer within the deadline
 * is logged (`onProblem`, one line without the path) and stopped, and that checkpoint runs on the
 * host's thread instead, as it did before the runner: the caller gets its answer either way, and
 * a checkpoint is idempotent, so a thread cut short mid-way leaves nothing half done. The next
 * checkpoint starts a new thread; after `MAX_THREAD_FAILURES` failures in a row the runner stays
 * on the host's thread. Where a runtime has no worker threads (`checkpointThreadsAvailable`) it
 * does so from the start.
 */
import workerThreads from "node:worker_threads";
import process from "node:process";
import type { StateStore } from "./store-handle.ts";
import { sqliteFilePath } from "./state-file-path.ts";
import {
  CHECKPOINT_THREAD_SOURCE,
  checkpointAndSync,
  type CheckpointAnswer,
  type CheckpointCounts,
  type CheckpointThreadData,
} from "./checkpoint-thread.ts";

export type { CheckpointCounts } from "./checkpoint-thread.ts";

/**
 * How long the caller waits for the thread's answer (ms). A checkpoint of the pass's ~8 MiB took
 * at most 734 ms under heavy load; a thread silent this long is hung (a stuck disk would stall
 * the host's own commits too).
 */
export const CHECKPOINT_DEADLINE_MS = 15_000;

/** Thread failures in a row after which checkpoints stay on the host's thread. */
export const MAX_THREAD_FAILURES = 3;

/** How long closing waits for a busy thread to end before the host goes on stopping. */
const CLOSE_WAIT_MS = 1_000;

export interface CheckpointResult extends CheckpointCounts {
  /** The checkpoint and fsync (ms), where they ran. */
  ms: number;
  /** Where it ran: on the checkpoint thread, or on the host's (no thread, or it failed). */
  on: "thread" | "host";
}

export interface CheckpointRunner {
  /**
   * A passive checkpoint of the state file, then an fsync of its WAL: every commit before the
   * call is durable once it resolves. Rejects only with the database's own error (from the
   * host's thread, where a thread's failure sends it).
   */
  checkpoint(): Promise<CheckpointResult>;
  /** Whether checkpoints go to a thread (false: no worker threads, or too many failures). */
  readonly offThread: boolean;
  /** Stops the thread (the host's stop, before it closes the store). */
  close(): Promise<void>;
}

export interface CheckpointRunnerOptions {
  deadlineMs?: number;
  /** Told each thread failure (one line, no path) and when the runner stays on the host's thread. */
  onProblem(message: string): void;
  /** Tests: the thread's source (one that dies or hangs), and the thread once started. */
  threadSource?: string;
  onThread?(thread: InstanceType<typeof workerThreads.Worker>): void;
}

/** The capability check: worker threads exist in this runtime (Node, its single executable, Deno). */
export function checkpointThreadsAvailable(): boolean {
  return typeof workerThreads?.Worker === "function";
}

/**
 * The WAL that SQLite writes for the store: beside the file it opened, which for a symlinked
 * state.sqlite is the link's target (sqliteFilePath), not beside the link, where an fsync would
 * find no file and be skipped.
 */
export function walPathOf(store: StateStore): string {
  return `${sqliteFilePath(store.path)}-wal`;
}

/** The same checkpoint on the calling thread (no runner: tests, the benchmark's baseline). */
export function checkpointHere(store: StateStore): CheckpointResult {
  const started = performance.now();
  const counts = checkpointAndSync(store.db, walPathOf(store));
  return { ...counts, ms: performance.now() - started, on: "host" };
}

type Thread = InstanceType<typeof workerThreads.Worker>;

interface Waiter {
  resolve(answer: CheckpointAnswer): void;
  reject(error: Error): void;
}

export function createCheckpointRunner(
  store: StateStore,
  options: CheckpointRunnerOptions,
): CheckpointRunner {
  const deadlineMs = options.deadlineMs ?? CHECKPOINT_DEADLINE_MS;
  let threadsLeft = checkpointThreadsAvailable() && store.path !== "";
  let failures = 0;
  let thread: Thread | null = null;
  let nextId = 1;
  const waiters = new Map<number, Waiter>();
  let closed = false;

  /** Ends the thread: every waiter falls back to the host's thread. */
  const fail = (which: Thread, message: string): void => {
    if (thread !== which) return; // an older thread's late news
    thread = null;
    void which.terminate().catch(() => {});
    failures++;
    const waiting = [...waiters.values()];
    waiters.clear();
    options.onProblem(
      `The checkpoint thread failed (${message}); checkpointing on the host's thread`,
    );
    if (failures >= MAX_THREAD_FAILURES && threadsLeft) {
      threadsLeft = false;
      options.onProblem(
        `The checkpoint thread failed ${failures} times in a row; checkpoints stay on the host's thread`,
      );
    }
    for (const w of waiting) w.reject(new Error(message));
  };

  const start = (): Thread => {
    const data: CheckpointThreadData = {
      path: store.path,
      walPath: walPathOf(store),
      fullfsync: process.platform === "darwin",
    };
    const started = new workerThreads.Worker(options.threadSource ?? CHECKPOINT_THREAD_SOURCE, {
      eval: true,
      workerData: data,
    });
    // It never keeps the host alive; a checkpoint awaited keeps it up through its deadline timer.
    started.unref();
    started.on("message", (answer: CheckpointAnswer) => {
      waiters.get(answer.id)?.resolve(answer);
    });
    started.on("error", (error: Error) => fail(started, firstLine(error)));
    started.on("exit", (code: number) => fail(started, `it exited with code ${code}`));
    options.onThread?.(started);
    return started;
  };

  /** One checkpoint on the thread; rejects when the thread failed (it is stopped then). */
  const onThread = (): Promise<CheckpointAnswer> => {
    if (!thread) thread = start();
    const current = thread;
    const id = nextId++;
    return new Promise<CheckpointAnswer>((resolve, reject) => {
      const timer = setTimeout(() => {
        fail(current, `no answer within ${deadlineMs} ms`);
        waiters.get(id)?.reject(new Error("no answer")); // if the runner closed meanwhile
      }, deadlineMs);
      const done = () => clearTimeout(timer);
      waiters.set(id, {
        resolve: (answer) => {
          done();
          waiters.delete(id);
          resolve(answer);
        },
        reject: (error) => {
          done();
          waiters.delete(id);
          reject(error);
        },
      });
      current.postMessage(id);
    });
  };

  return {
    get offThread() {
      return threadsLeft && !closed;
    },
    async checkpoint() {
      if (threadsLeft && !closed) {
        let answer: CheckpointAnswer | null = null;
        try {
          answer = await onThread();
        } catch {
          // logged by fail(); the host's thread does it below
        }
        if (answer && !("error" in answer)) {
          failures = 0;
          return {
            busy: answer.busy,
            log: answer.log,
            checkpointed: answer.checkpointed,
            ms: answer.ms,
            on: "thread",
          };
        }
        // The database's own error (a full disk, a damaged file): the host's thread meets it
        // too and throws it to the caller.
      }
      if (closed) throw new Error("The checkpoint runner was closed (the host is stopping)");
      return checkpointHere(store);
    },
    async close() {
      closed = true;
      const current = thread;
      thread = null;
      const waiting = [...waiters.values()];
      waiters.clear();
      for (const w of waiting) w.reject(new Error("the runner closed"));
      // A checkpoint or fsync in native code cannot be interrupted: a stalled disk must not
      // hold the host's stop (the thread's own connection harms nothing once the host closes).
      if (current) {
        await Promise.race([
          current.terminate().catch(() => {}),
          new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref()),
        ]);
      }
    },
  };
}

function firstLine(error: unknown): string {
  return String((error as Error)?.message ?? error).split("\n")[0]!;
}

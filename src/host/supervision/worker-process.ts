/**
 * Spawning one worker child: its own process group (detached => setsid), stdin closed,
 * stdout/stderr piped into capped files in the user-only state directory, and fd 3 as the
 * private NDJSON channel (a plain pipe, not Node's `ipc`, so any runtime can speak it).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { identifyChildNow, type ProcessIdentity } from "../../os/process-identity.ts";
import { stopProcessGroup } from "../../os/stop-group.ts";
import { captureStream, removeEmptyLogs } from "./captured-output.ts";
import { createFrameReader, type FrameReader } from "./frame-reader.ts";

export { pruneWorkerLogs, removeEmptyLogs } from "./captured-output.ts";

/** How long a child's last output may take to leave its pipes after it exited. */
export const OUTPUT_DRAIN_MS = 1_000;

export interface WorkerSpawnOptions {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Working directory of the child before it moves into the run's project. */
  cwd: string;
  /** `<stateDir>/workers`; created 0700 when missing. */
  logDir: string;
  /** File stem for the captured output (`<stem>.out`, `<stem>.err`). Not secret, not a path. */
  logStem: string;
  /** Bytes allowed per captured stream; the rest never reaches the file. */
  maxOutputBytes: number;
  /** Called once when a captured stream passes its bound (the caller stops the child). */
  onOutputExceeded(stream: "stdout" | "stderr", bytes: number): void;
}

export interface WorkerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SpawnedWorker {
  child: ChildProcess;
  /** PID plus start time, read right after the fork. Null only if the child died at once. */
  identity: ProcessIdentity | null;
  /** The fd-3 channel. */
  channel: Duplex;
  /** Resolves once the child exited (its streams may still drain). */
  exited: Promise<WorkerExit>;
  /** Resolves once both captured output files are closed. */
  captured: Promise<void>;
  /**
   * Closes the output pipes: after the child exited, a descendant that inherited them must not
   * keep them (and the host's reading) alive.
   */
  closeOutput(): void;
  /** Paths of the captured output files (for maintainers; never logged). */
  logFiles: { stdout: string; stderr: string };
  /**
   * Who hears that a captured stream passed its bound: set at spawn, replaced when a prepared
   * child changes hands (the epoch that owns it now is stopped, not the first one).
   */
  onOutputExceeded: (stream: "stdout" | "stderr", bytes: number) => void;
}

const readers = new WeakMap<SpawnedWorker, FrameReader>();

/**
 * The one frame reader of a child's channel (created on first use), shared by every owner the
 * child has over its life. A child read this way is never read with `readFrames` too.
 */
export function readerOf(spawned: SpawnedWorker): FrameReader {
  let reader = readers.get(spawned);
  if (!reader) {
    reader = createFrameReader(spawned.channel);
    readers.set(spawned, reader);
  }
  return reader;
}

/** Starts the worker. Throws a one-line error when the program cannot be spawned. */
export function spawnWorkerProcess(options: WorkerSpawnOptions): SpawnedWorker {
  mkdirSync(options.logDir, { recursive: true, mode: 0o700 });
  const logFiles = {
    stdout: join(options.logDir, `${options.logStem}.out`),
    stderr: join(options.logDir, `${options.logStem}.err`),
  };
  let child: ChildProcess;
  try {
    child = spawn(options.command, options.args, {
      detached: true,
      // stdout and stderr are pipes the host copies into the log files, capped at the write.
      stdio: ["ignore", "pipe", "pipe", "pipe"],
      env: options.env,
      cwd: options.cwd,
    });
  } catch (error) {
    throw new Error(`Worker not started: ${error instanceof Error ? error.message : error}`, {
      cause: error,
    });
  }
  const identity = identifyChildNow(child);
  const channel = child.stdio[3] as Duplex;
  // A child that dies before the host's first write (killed right after its start) fails that
  // write with EPIPE, emitted before any frame reader listens. The write's callback reports it
  // and the reader sees the channel end; unheard, the event would throw in the host.
  channel.on("error", () => {});

  let exceeded = false;
  const cut = (stream: "stdout" | "stderr") => (bytes: number) => {
    if (exceeded) return;
    exceeded = true;
    spawned.onOutputExceeded(stream, bytes);
  };
  const captures = (["stdout", "stderr"] as const).map((stream) =>
    captureStream(child[stream]!, logFiles[stream], options.maxOutputBytes, cut(stream))
  );
  const captured = Promise.all(captures.map((c) => c.done)).then(() => {});

  const exited = new Promise<WorkerExit>((resolve) => {
    let done = false;
    const finish = (exit: WorkerExit) => {
      if (done) return;
      done = true;
      resolve(exit);
    };
    child.once("exit", (code, signal) => finish({ code, signal }));
    child.once("error", () => finish({ code: null, signal: null }));
  });
  const spawned: SpawnedWorker = {
    child,
    identity,
    channel,
    exited,
    captured,
    closeOutput() {
      child.stdout?.destroy();
      child.stderr?.destroy();
    },
    logFiles,
    onOutputExceeded: options.onOutputExceeded,
  };
  return spawned;
}

/**
 * After the child exited: lets its output pipes end on their own for up to `ms` (the last lines
 * may still be in the pipe), then closes them, so a descendant that inherited them cannot keep
 * them, and the host's reading, alive. Resolves once the files are closed.
 */
export async function closeAfterDrain(spawned: SpawnedWorker, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    spawned.captured,
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
  spawned.closeOutput();
  await spawned.captured;
}

/**
 * Ends a child the host is done with: its channel closed, its group stopped (SIGTERM, SIGKILL
 * after `graceMs`), `forget` called once the group is gone, its output drained and empty log
 * files removed.
 */
export async function retireChild(
  spawned: SpawnedWorker,
  graceMs: number,
  forget: () => void,
): Promise<void> {
  spawned.channel.destroy();
  if (spawned.identity) {
    await stopProcessGroup(spawned.identity, { graceMs });
    forget();
  }
  await spawned.exited;
  await closeAfterDrain(spawned, OUTPUT_DRAIN_MS);
  removeEmptyLogs(spawned.logFiles);
}

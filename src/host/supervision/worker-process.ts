/**
 * Spawning one worker child: its own process group (detached => setsid), stdin closed,
 * stdout/stderr appended to bounded files in the user-only state directory, and fd 3 as the
 * private NDJSON channel (a plain pipe, not Node's `ipc`, so any runtime can speak it).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, fstatSync, mkdirSync, openSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { type ProcessIdentity, readProcessIdentity } from "../../os/process-identity.ts";

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
  /** Bytes allowed per captured stream. */
  maxOutputBytes: number;
  /** How often captured file sizes are checked. */
  outputCheckMs?: number;
  /** Called once when a captured stream passes its bound. */
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
  /** Paths of the captured output files (for maintainers; never logged). */
  logFiles: { stdout: string; stderr: string };
}

/** Starts the worker. Throws a one-line error when the program cannot be spawned. */
export function spawnWorkerProcess(options: WorkerSpawnOptions): SpawnedWorker {
  mkdirSync(options.logDir, { recursive: true, mode: 0o700 });
  const logFiles = {
    stdout: join(options.logDir, `${options.logStem}.out`),
    stderr: join(options.logDir, `${options.logStem}.err`),
  };
  const outFd = openSync(logFiles.stdout, "a", 0o600);
  const errFd = openSync(logFiles.stderr, "a", 0o600);
  let child: ChildProcess;
  try {
    child = spawn(options.command, options.args, {
      detached: true,
      stdio: ["ignore", outFd, errFd, "pipe"],
      env: options.env,
      cwd: options.cwd,
    });
  } catch (error) {
    closeSync(outFd);
    closeSync(errFd);
    throw new Error(`Worker not started: ${error instanceof Error ? error.message : error}`, {
      cause: error,
    });
  }
  const identity = child.pid === undefined ? null : readProcessIdentity(child.pid);
  const channel = child.stdio[3] as Duplex;

  let exceeded = false;
  const checkOutput = () => {
    if (exceeded) return;
    for (const [stream, fd] of [["stdout", outFd], ["stderr", errFd]] as const) {
      const size = fstatSync(fd).size;
      if (size > options.maxOutputBytes) {
        exceeded = true;
        options.onOutputExceeded(stream, size);
        return;
      }
    }
  };
  const timer = setInterval(checkOutput, options.outputCheckMs ?? 200);
  timer.unref();

  const exited = new Promise<WorkerExit>((resolve) => {
    let done = false;
    const finish = (exit: WorkerExit) => {
      if (done) return;
      done = true;
      clearInterval(timer);
      checkOutput();
      closeSync(outFd);
      closeSync(errFd);
      resolve(exit);
    };
    child.once("exit", (code, signal) => finish({ code, signal }));
    child.once("error", () => finish({ code: null, signal: null }));
  });
  return { child, identity, channel, exited, logFiles };
}

/** Removes captured output files that stayed empty (the common case): nothing to keep. */
export function removeEmptyLogs(logFiles: { stdout: string; stderr: string }): void {
  for (const path of [logFiles.stdout, logFiles.stderr]) {
    try {
      if (statSync(path).size === 0) rmSync(path);
    } catch {
      // already gone
    }
  }
}

/** Keeps the `keep` newest captured output files in `logDir`, oldest removed first. */
export function pruneWorkerLogs(logDir: string, keep: number): number {
  let files: { path: string; mtime: number }[];
  try {
    files = readdirSync(logDir)
      .filter((name) => name.endsWith(".out") || name.endsWith(".err"))
      .map((name) => {
        const path = join(logDir, name);
        return { path, mtime: statSync(path).mtimeMs };
      });
  } catch {
    return 0;
  }
  files.sort((a, b) => b.mtime - a.mtime);
  let removed = 0;
  for (const file of files.slice(keep)) {
    try {
      rmSync(file.path);
      removed++;
    } catch {
      // raced with another removal
    }
  }
  return removed;
}

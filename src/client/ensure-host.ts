/**
 * Connects to the host, starting it on demand. When nothing answers, one client per state
 * directory (the holder of the start lock, start-lock.ts) starts `pi-workflows host run` itself
 * and waits for its ready handshake; every other client only waits for the socket. While it
 * waits the client says so (`onWait`, the CLI's stderr), and it gives up at a deadline with a
 * `HostUnavailableError` whose message says what to do next.
 */
import { failureDetail, HostBusyError, HostUnavailableError } from "../protocol/failures.ts";
import { HostStartError, isBadSetting } from "../protocol/host-ready.ts";
import type { SelfCommand } from "../os/self-launch.ts";
import { connectHost, type ConnectOptions, type HostConnection } from "./host-connection.ts";
import { clientStateDir, hostSocketPath } from "./socket-path.ts";
import { startDetachedHost } from "./start-host.ts";
import { type StartLock, tryStartLock } from "./start-lock.ts";

export const DEFAULT_START_TIMEOUT_MS = 20_000;
const PROBE_TIMEOUT_MS = 2_000;
const POLL_INTERVAL_MS = 25;
/** The first word to the user after this long without a host, then every `REPEAT`. */
const FIRST_NOTICE_MS = 1_000;
const NOTICE_REPEAT_MS = 5_000;

export interface EnsureHostOptions extends ConnectOptions {
  /** Defaults to the environment's state directory. */
  stateDir?: string;
  /** Environment of the started host; defaults to this process's (with `stateDir` applied). */
  env?: Record<string, string | undefined>;
  /** Whole deadline for starting the host and seeing it answer. */
  startTimeoutMs?: number;
  /**
   * Command that runs the host; defaults to `selfCommand(["host", "run"])`. A function is asked
   * at each start, and what it throws (no usable Node, say) is the start's one-line failure.
   */
  startCommand?: SelfCommand | (() => SelfCommand);
  /** When false, only connects (no start on demand). */
  autoStart?: boolean;
  /** Told (one line each time) while the client waits for a host: what it is waiting for. */
  onWait?: (message: string) => void;
}

/**
 * The host could not be started for a reason a retry does not fix (a damaged database, a
 * missing executable, an unusable state directory): the message is the host's own one line. A
 * bad PI_WORKFLOWS_* setting is not one of these: it is thrown as its own `RangeError` (exit 2).
 */
export class HostStartFailedError extends HostUnavailableError {}

/** An open connection whose host answered `host.status` and is not stopping. */
export async function ensureHost(options: EnsureHostOptions = {}): Promise<HostConnection> {
  const env = options.env ?? process.env;
  const stateDir = options.stateDir ?? clientStateDir(env);
  const socketPath = hostSocketPath(stateDir);
  const first = await probe(socketPath, options);
  if (first.connection) return first.connection;
  if (options.autoStart === false) throw first.error;

  const timeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  const started = Date.now();
  const deadline = started + timeoutMs;
  let lastError = first.error;
  let waitingFor = "no host answers; starting one";
  let startBackoff = 100;
  let nextStartAt = 0;
  let noticeAt = started + FIRST_NOTICE_MS;
  for (;;) {
    const now = Date.now();
    if (now >= deadline) break;
    if (options.onWait && now >= noticeAt) {
      options.onWait(
        `Waiting for the workflow host (${Math.round((now - started) / 1000)} s): ${waitingFor}`,
      );
      noticeAt = now + NOTICE_REPEAT_MS;
    }
    // A busy host is running: wait for a free connection instead of starting another.
    if (now >= nextStartAt && !(lastError instanceof HostBusyError)) {
      const lock = lockOrFail(stateDir);
      if (lock === null) waitingFor = "another client is starting it";
      else {
        try {
          // The socket may have come up while this client waited for the lock.
          const again = await probe(socketPath, options);
          if (again.connection) return again.connection;
          waitingFor = "no host answers; starting one";
          await startDetachedHost({
            stateDir,
            env: { ...env, PI_WORKFLOWS_STATE_DIR: stateDir },
            timeoutMs: Math.max(1, deadline - Date.now()),
            command: typeof options.startCommand === "function"
              ? options.startCommand()
              : options.startCommand,
          });
        } catch (error) {
          // A bad setting is the caller's to fix (exit 2), not a host to wait for: the host's
          // own (its ready handshake says badSetting) or one read here before it is spawned
          // (PI_WORKFLOWS_HOST_LOG_BYTES, for host.log's rotation).
          if (error instanceof HostStartError && error.code === "badSetting") {
            throw new RangeError(error.message);
          }
          if (isBadSetting(error)) throw error;
          if (!(error instanceof HostStartError && error.code === "alreadyRunning")) {
            throw new HostStartFailedError(`the host could not be started: ${firstLine(error)}`, {
              cause: error,
            });
          }
          // Another host holds the state: it is stopping, or frozen with its lease still live.
          // Try again later; meanwhile its socket may start answering.
          waitingFor = "another host holds the state (stopping, or not answering)";
          lastError = new HostUnavailableError(firstLine(error));
          nextStartAt = Date.now() + startBackoff;
          startBackoff = Math.min(startBackoff * 2, 1_000);
        } finally {
          lock.release();
        }
      }
    }
    const attempt = await probe(socketPath, options);
    if (attempt.connection) return attempt.connection;
    // "Another host holds the state" says more than "no socket": keep it for the final message.
    if (nextStartAt <= Date.now() || attempt.error instanceof HostBusyError) {
      lastError = attempt.error;
    }
    await new Promise((resolve) =>
      setTimeout(resolve, Math.min(POLL_INTERVAL_MS, Math.max(0, deadline - Date.now())))
    );
  }
  throw new HostUnavailableError(
    `the host did not answer within ${timeoutMs} ms (${failureDetail(lastError)}); ` +
      "check `pi-workflows host status` and host.log in the state directory",
  );
}

function lockOrFail(stateDir: string): StartLock | null {
  try {
    return tryStartLock(stateDir);
  } catch (error) {
    if (isBadSetting(error)) throw error;
    throw new HostStartFailedError(
      `the host could not be started: ${lockProblem(stateDir, error)}`,
      {
        cause: error,
      },
    );
  }
}

/**
 * What kept the start lock from being taken, as the user can act on it: a raw `EEXIST: file
 * already exists, mkdir ...` does not say that the state directory is a file. An error with no
 * system code is not about the directory and keeps its own line (a bad
 * PI_WORKFLOWS_PROCESS_BACKEND, read for the lock's holder identity, never gets here:
 * `lockOrFail` passes it on as a bad setting).
 */
export function lockProblem(stateDir: string, error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  if (typeof code !== "string") return firstLine(error);
  if (code === "EEXIST" || code === "ENOTDIR") {
    return `the state directory ${stateDir} (or a directory above it) is a file, not a ` +
      "directory; move it away, or point PI_WORKFLOWS_STATE_DIR at a directory";
  }
  // The lock is made by a hard link: a filesystem without them (vfat, some FUSE or SMB mounts)
  // answers EPERM from link() in a directory that is writable.
  if (code === "EPERM" && (error as { syscall?: unknown }).syscall === "link") {
    return `the state directory ${stateDir} is on a filesystem without hard links, which the ` +
      "host's start lock needs; point PI_WORKFLOWS_STATE_DIR at a local directory";
  }
  if (code === "EACCES" || code === "EPERM" || code === "EROFS") {
    return `the state directory ${stateDir} cannot be written (${code}): it must be a ` +
      "directory you own and can write; point PI_WORKFLOWS_STATE_DIR at one";
  }
  return `the state directory cannot be used (${firstLine(error)})`;
}

type ProbeResult =
  | { connection: HostConnection; error?: undefined }
  | { connection?: undefined; error: HostUnavailableError };

/**
 * Connects and asks `host.status`. A host that answers anything but success, or says it is
 * stopping, is not usable.
 */
async function probe(socketPath: string, options: ConnectOptions): Promise<ProbeResult> {
  let connection: HostConnection;
  try {
    connection = await connectHost(socketPath, {
      ...options,
      connectTimeoutMs: options.connectTimeoutMs ?? PROBE_TIMEOUT_MS,
    });
  } catch (error) {
    return { error: asUnavailable(error) };
  }
  try {
    const response = await connection.request("host.status", { timeoutMs: PROBE_TIMEOUT_MS });
    if (
      (response.outcome === "accepted" || response.outcome === "adopted") &&
      response.receipt?.state !== "stopping"
    ) {
      return { connection };
    }
    connection.close();
    return {
      error: new HostUnavailableError(
        response.outcome === "accepted"
          ? "the host is stopping"
          : `the host answered ${response.outcome}: ${
            response.error?.message ?? "no reason given"
          }`,
      ),
    };
  } catch (error) {
    connection.close();
    return { error: asUnavailable(error) };
  }
}

function asUnavailable(error: unknown): HostUnavailableError {
  if (error instanceof HostUnavailableError) return error;
  return new HostUnavailableError(firstLine(error), { cause: error });
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split("\n")[0] ?? "").trim().replace(/\.$/, "") || "unknown error";
}

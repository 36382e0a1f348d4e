/**
 * Connects to the host, starting it on demand. Starting runs `pi-workflows host start` (this same
 * program, see self-launch.ts), which returns once its host answers; this side then waits, with
 * a deadline, until the socket answers `host.status`. Every failure becomes a
 * `HostUnavailableError` whose message says what to do next.
 */
import { spawn } from "node:child_process";
import { HostUnavailableError } from "../protocol/failures.ts";
import { type SelfCommand, selfCommand } from "../os/self-launch.ts";
import { connectHost, type ConnectOptions, type HostConnection } from "./host-connection.ts";
import { clientStateDir, hostSocketPath } from "./socket-path.ts";

export const DEFAULT_START_TIMEOUT_MS = 20_000;
const PROBE_TIMEOUT_MS = 2_000;
const PROBE_INTERVAL_MS = 50;
const MAX_STDERR_BYTES = 8 * 1024;

export interface EnsureHostOptions extends ConnectOptions {
  /** Defaults to the environment's state directory. */
  stateDir?: string;
  /** Environment of the started host; defaults to this process's (with `stateDir` applied). */
  env?: Record<string, string | undefined>;
  /** Whole deadline for starting the host and seeing it answer. */
  startTimeoutMs?: number;
  /** Command that starts the host; defaults to `selfCommand(["host", "start"])`. */
  startCommand?: SelfCommand;
  /** When false, only connects (no start on demand). */
  autoStart?: boolean;
}

/** An open connection whose host answered `host.status`. */
export async function ensureHost(options: EnsureHostOptions = {}): Promise<HostConnection> {
  const env = options.env ?? process.env;
  const stateDir = options.stateDir ?? clientStateDir(env);
  const socketPath = hostSocketPath(stateDir);
  const first = await probe(socketPath, options);
  if (first.connection) return first.connection;
  if (options.autoStart === false) throw first.error;

  const timeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  const starter = startHost(options.startCommand ?? selfCommand(["host", "start"]), {
    ...env,
    PI_WORKFLOWS_STATE_DIR: stateDir,
  });
  try {
    let lastError = first.error;
    while (Date.now() < deadline) {
      const attempt = await probe(socketPath, options);
      if (attempt.connection) return attempt.connection;
      lastError = attempt.error;
      const exit = starter.exit();
      if (exit && exit.code !== 0) {
        const again = await probe(socketPath, options);
        if (again.connection) return again.connection;
        throw new HostUnavailableError(
          `\`pi-workflows host start\` failed (${exitText(exit)})${
            starterDetail(starter.stderr())
          }`,
        );
      }
      await starter.waitExit(Math.min(PROBE_INTERVAL_MS, Math.max(0, deadline - Date.now())));
    }
    throw new HostUnavailableError(
      `the host did not answer within ${timeoutMs} ms of starting it (${lastError.message}); ` +
        "check `pi-workflows host status` and host.log in the state directory",
    );
  } finally {
    if (!starter.exit()) starter.kill();
    starter.release();
  }
}

type ProbeResult =
  | { connection: HostConnection; error?: undefined }
  | { connection?: undefined; error: HostUnavailableError };

/** Connects and asks `host.status`; a host that answers anything but success is not usable. */
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
    if (response.outcome === "accepted" || response.outcome === "adopted") return { connection };
    connection.close();
    return {
      error: new HostUnavailableError(
        `the host answered ${response.outcome}: ${response.error?.message ?? "no reason given"}`,
      ),
    };
  } catch (error) {
    connection.close();
    return { error: asUnavailable(error) };
  }
}

function asUnavailable(error: unknown): HostUnavailableError {
  if (error instanceof HostUnavailableError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new HostUnavailableError(message, { cause: error });
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface Starter {
  exit(): Exit | null;
  /** Resolves when the starter exits or after `ms`, whichever is first. */
  waitExit(ms: number): Promise<void>;
  stderr(): string;
  kill(): void;
  /** Stops reading its stderr, so a grandchild that kept the pipe cannot hold this process open. */
  release(): void;
}

function startHost(command: SelfCommand, env: Record<string, string | undefined>): Starter {
  let exit: Exit | null = null;
  let stderr = "";
  const waiters = new Set<() => void>();
  const child = spawn(command.command, command.args, {
    stdio: ["ignore", "ignore", "pipe"],
    env: env as NodeJS.ProcessEnv,
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    if (stderr.length < MAX_STDERR_BYTES) {
      stderr += chunk.toString("utf8").slice(0, MAX_STDERR_BYTES);
    }
  });
  const finish = (next: Exit) => {
    if (exit) return;
    exit = next;
    for (const wake of waiters) wake();
  };
  child.on("error", (error) => {
    stderr += error.message;
    finish({ code: -1, signal: null });
  });
  child.on("exit", (code, signal) => finish({ code, signal }));
  return {
    exit: () => exit,
    stderr: () => stderr,
    waitExit(ms) {
      if (exit) return Promise.resolve();
      return new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer);
          waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        waiters.add(done);
      });
    },
    kill() {
      if (child.pid !== undefined && !exit) child.kill("SIGTERM");
    },
    release() {
      child.stderr?.destroy();
      child.unref();
    },
  };
}

function exitText(exit: Exit): string {
  return exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
}

/** The starter's last non-empty stderr line (it prints one actionable line on failure). */
function starterDetail(stderr: string): string {
  const lines = stderr.split("\n").map((line) => line.trim()).filter((line) => line !== "");
  const last = lines.at(-1);
  return last ? `: ${last.slice(0, 500)}` : "";
}

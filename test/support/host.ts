/**
 * Test helpers for real host processes: temp state directories, the CLI spawned as a child,
 * a raw socket client, and bounded waits. Every process a test starts is stopped by PID.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { FrameDecoder } from "../../src/protocol/framing.ts";
import { removeTempRoot } from "./temp-root.ts";
import { shareWorkerCompileCache } from "./worker-compile-cache.ts";

import { waitFor, waitWhileBusy } from "./wait.ts";

// The bounded wait every test uses; it lives in wait.ts.
export { waitFor };

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const CLI = join(ROOT, "src/cli/main.ts");
/**
 * The Node flags of every CLI a test starts from source: the shared compile cache
 * (compile-cache.ts). The CLI passes them on to the host it starts.
 */
export const NODE_ARGS = ["--import", join(ROOT, "test/support/compile-cache.ts")];

export interface TempHome {
  root: string;
  stateDir: string;
  socketPath: string;
  env: NodeJS.ProcessEnv;
  /** Stops what still runs of this home (see temp-root.ts), then removes it. */
  cleanup(): Promise<void>;
}

export interface TempHomeOptions {
  /** A compile cache of the state directory's own (what a new user's host starts with). */
  ownCompileCache?: boolean;
}

/**
 * A short temp root (unix socket paths are limited) with state and agent dirs inside. The
 * state directory's `compile-cache` is a link to the shared one (worker-compile-cache.ts)
 * unless `ownCompileCache`.
 */
export function tempHome(
  extraEnv: NodeJS.ProcessEnv = {},
  options: TempHomeOptions = {},
): TempHome {
  const root = mkdtempSync(join(tmpdir(), "pwh-"));
  const stateDir = join(root, "s");
  if (!options.ownCompileCache) shareWorkerCompileCache(stateDir);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PI_WORKFLOWS_STATE_DIR: stateDir,
    PI_CODING_AGENT_DIR: join(root, "agent"),
    ...extraEnv,
  };
  return {
    root,
    stateDir,
    socketPath: join(stateDir, "host.sock"),
    env,
    cleanup: () => removeTempRoot(root),
  };
}

export interface CliProcess {
  child: ChildProcess;
  pid: number;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves when stderr contains `text`; rejects at the deadline or on exit. */
  waitForStderr(text: string, timeoutMs?: number): Promise<void>;
  /** The same for stdout. */
  waitForStdout(text: string, timeoutMs?: number): Promise<void>;
  kill(signal?: NodeJS.Signals): void;
}

const running = new Set<CliProcess>();

export interface SpawnCliOptions {
  /** Working directory of the CLI process (default: the repository root). */
  cwd?: string;
  /** Text written to the CLI's stdin (default: no stdin). */
  stdin?: string;
}

export function spawnCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  options: SpawnCliOptions = {},
): CliProcess {
  const child = spawn(process.execPath, [...NODE_ARGS, CLI, ...args], {
    cwd: options.cwd ?? ROOT,
    env,
    stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  if (options.stdin !== undefined) child.stdin!.end(options.stdin);
  let out = "";
  let err = "";
  const listeners = new Set<() => void>();
  child.stdout!.on("data", (d) => {
    out += d;
    for (const listener of listeners) listener();
  });
  child.stderr!.on("data", (d) => {
    err += d;
    for (const listener of listeners) listener();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => {
    child.on("exit", (code, signal) => {
      running.delete(proc);
      for (const listener of listeners) listener();
      res({ code, signal });
    });
  });
  const waitForText = (read: () => string, text: string, timeoutMs: number) =>
    new Promise<void>((res, rej) => {
      const check = () => {
        if (read().includes(text)) return done(null);
        if (child.exitCode !== null || child.signalCode !== null) {
          done(new Error(`Process exited before '${text}': ${err.slice(-500)}`));
        }
      };
      const timer = setTimeout(
        () => done(new Error(`Timed out waiting for '${text}': ${err.slice(-500)}`)),
        timeoutMs,
      );
      const done = (error: Error | null) => {
        clearTimeout(timer);
        listeners.delete(check);
        if (error) rej(error);
        else res();
      };
      listeners.add(check);
      check();
    });
  const proc: CliProcess = {
    child,
    pid: child.pid!,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForStderr: (text, timeoutMs = 15_000) => waitForText(() => err, text, timeoutMs),
    waitForStdout: (text, timeoutMs = 15_000) => waitForText(() => out, text, timeoutMs),
    kill: (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, signal);
    },
  };
  running.add(proc);
  return proc;
}

/** Runs the CLI to completion with a deadline. */
export async function runCliProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 20_000,
  options: SpawnCliOptions = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawnCli(args, env, options);
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  const { code } = await proc.exited;
  clearTimeout(timer);
  return { code, stdout: proc.stdout(), stderr: proc.stderr() };
}

/**
 * Starts `host run` and waits until it accepts commands: until it has gone 15 s without using CPU
 * (a hang), 2 minutes at most. A start is ~0.8 s of CPU, which a nice-19 run at load 20-22 took
 * over 15 s to get: a wall-time bound failed hosts that were only starting slowly.
 */
export async function startHostProcess(env: NodeJS.ProcessEnv): Promise<CliProcess> {
  const host = spawnCli(["host", "run"], env);
  await waitWhileBusy(host.pid, (ms) => host.waitForStderr("host.ready", ms), 15_000, 120_000);
  return host;
}

/** Stops a process by PID: SIGTERM, then SIGKILL after `graceMs`. */
export async function stopProcess(proc: CliProcess, graceMs = 5000): Promise<void> {
  proc.kill("SIGTERM");
  const timer = setTimeout(() => proc.kill("SIGKILL"), graceMs);
  await proc.exited;
  clearTimeout(timer);
}

/** Kills every CLI process a test left running (afterEach). */
export async function killAll(): Promise<void> {
  await Promise.all([...running].map((proc) => stopProcess(proc, 2000)));
}

/** Polls `condition` until it is truthy or the deadline passes. */

let requestCounter = 0;

/** A host request envelope with fresh ids. */
export function hostRequest(
  operation: string,
  fields: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    schema: "pi-workflows.host-request.v1",
    requestId: `req-${process.pid}-${++requestCounter}`,
    clientId: "test-client",
    operation,
    payload: {},
    ...fields,
  };
}

/** A raw socket client that reads bounded NDJSON responses. */
export class RawClient {
  readonly socket: net.Socket;
  #decoder = new FrameDecoder();
  #frames: unknown[] = [];
  #waiters: (() => void)[] = [];
  #closed = false;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on("data", (chunk: Buffer) => {
      for (const frame of this.#decoder.push(chunk)) {
        this.#frames.push(frame.ok ? frame.value : { frameError: frame.error.code });
      }
      this.#wake();
    });
    socket.on("close", () => {
      this.#closed = true;
      this.#wake();
    });
    socket.on("error", () => {});
  }

  static connect(socketPath: string, timeoutMs = 5000): Promise<RawClient> {
    return new Promise((res, rej) => {
      const socket = net.connect(socketPath);
      const timer = setTimeout(() => {
        socket.destroy();
        rej(new Error("Timed out connecting"));
      }, timeoutMs);
      socket.once("connect", () => {
        clearTimeout(timer);
        res(new RawClient(socket));
      });
      socket.once("error", (error) => {
        clearTimeout(timer);
        rej(error);
      });
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  write(data: string | Uint8Array): void {
    if (!this.socket.destroyed) this.socket.write(data);
  }

  send(value: unknown): void {
    this.write(JSON.stringify(value) + "\n");
  }

  /** The next response frame, or null when the connection closed first. */
  async next(timeoutMs = 10_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    while (this.#frames.length === 0) {
      if (this.#closed) return null;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error("Timed out waiting for a response");
      await new Promise<void>((res) => {
        const timer = setTimeout(res, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          res();
        });
      });
    }
    return this.#frames.shift();
  }

  async request(value: Record<string, unknown>, timeoutMs = 10_000): Promise<any> {
    this.send(value);
    return await this.next(timeoutMs);
  }

  /** Resolves once the host closed the connection. */
  async waitClosed(timeoutMs = 10_000): Promise<void> {
    await waitFor(() => this.#closed, "the connection to close", timeoutMs);
  }

  close(): void {
    this.socket.destroy();
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}

/** One request on a fresh connection. */
export async function requestOnce(
  socketPath: string,
  value: Record<string, unknown>,
): Promise<any> {
  const client = await RawClient.connect(socketPath);
  try {
    return await client.request(value);
  } finally {
    client.close();
  }
}

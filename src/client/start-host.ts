/**
 * Starts `pi-workflows host run` detached (its own session and process group, so it outlives the
 * client), with stdout and stderr appended to `<stateDir>/host.log`, and waits for its ready
 * handshake on fd 3. The log is rotated to `host.log.1` at each start once it passes its byte
 * budget, so it stays bounded. Callers hold the start lock (start-lock.ts).
 */
import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync, renameSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Readable } from "node:stream";
import * as v from "valibot";
import {
  type HostReadyMessage,
  HostReadyMessageSchema,
  HostStartError,
  READY_FD_ENV,
} from "../protocol/host-ready.ts";
import { readPositiveIntegerEnv } from "../os/env-integer.ts";
import { type SelfCommand, selfCommand } from "../os/self-launch.ts";

export const HOST_LOG_FILE_NAME = "host.log";
export const DEFAULT_HOST_START_TIMEOUT_MS = 20_000;
const DEFAULT_LOG_BYTES = 1024 * 1024;

export interface StartDetachedHostOptions {
  stateDir: string;
  env: Record<string, string | undefined>;
  timeoutMs?: number;
  /** Defaults to `selfCommand(["host", "run"])`. */
  command?: SelfCommand;
}

/** Starts the host in the background; resolves with its epoch once it accepts commands. */
export async function startDetachedHost(
  options: StartDetachedHostOptions,
): Promise<{ epoch: number; pid: number }> {
  mkdirSync(options.stateDir, { recursive: true, mode: 0o700 });
  const logPath = join(options.stateDir, HOST_LOG_FILE_NAME);
  rotateLog(
    logPath,
    readPositiveIntegerEnv(options.env, "PI_WORKFLOWS_HOST_LOG_BYTES") ?? DEFAULT_LOG_BYTES,
  );
  const logFd = openSync(logPath, "a", 0o600);
  const command = options.command ?? selfCommand(["host", "run"]);
  const timeoutMs = options.timeoutMs ?? DEFAULT_HOST_START_TIMEOUT_MS;
  let child;
  try {
    child = spawn(command.command, command.args, {
      detached: true,
      stdio: ["ignore", logFd, logFd, "pipe"],
      env: {
        ...options.env,
        PI_WORKFLOWS_STATE_DIR: options.stateDir,
        [READY_FD_ENV]: "3",
      } as NodeJS.ProcessEnv,
    });
  } finally {
    closeSync(logFd);
  }
  const readyPipe = child.stdio[3] as Readable;
  try {
    const message = await readReady(readyPipe, child, timeoutMs);
    if (!message.ready) {
      throw new HostStartError(message.code, message.message);
    }
    return { epoch: message.epoch, pid: child.pid! };
  } catch (error) {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // Already gone.
      }
    }
    throw error;
  } finally {
    readyPipe.destroy();
    child.unref();
  }
}

function readReady(
  pipe: Readable,
  child: ReturnType<typeof spawn>,
  timeoutMs: number,
): Promise<HostReadyMessage> {
  return new Promise((resolve, reject) => {
    let text = "";
    const finish = (error: Error | null, message?: HostReadyMessage) => {
      clearTimeout(timer);
      pipe.off("data", onData);
      child.off("exit", onExit);
      child.off("error", onError);
      if (error) reject(error);
      else resolve(message!);
    };
    const onData = (chunk: Buffer) => {
      text += chunk.toString("utf8");
      if (text.length > 64 * 1024) {
        return finish(new HostStartError("startFailed", "Host start failed: bad ready handshake"));
      }
      const newline = text.indexOf("\n");
      if (newline === -1) return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(text.slice(0, newline));
      } catch {
        parsed = undefined;
      }
      const result = v.safeParse(HostReadyMessageSchema, parsed);
      if (!result.success) {
        return finish(new HostStartError("startFailed", "Host start failed: bad ready handshake"));
      }
      finish(null, result.output);
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      finish(
        new HostStartError(
          "startFailed",
          `Host start failed: the host exited (${
            signal ? `signal ${signal}` : `exit code ${code}`
          }) before it was ready; see host.log in the state directory`,
        ),
      );
    };
    const onError = (error: Error) => {
      finish(new HostStartError("startFailed", `Host start failed: ${error.message}`));
    };
    const timer = setTimeout(() => {
      finish(
        new HostStartError(
          "startFailed",
          `Host start failed: not ready within ${timeoutMs} ms; see host.log in the state directory`,
        ),
      );
    }, timeoutMs);
    pipe.on("data", onData);
    pipe.on("error", () => {});
    child.on("exit", onExit);
    child.on("error", onError);
  });
}

function rotateLog(logPath: string, maxBytes: number): void {
  try {
    if (statSync(logPath).size > maxBytes) renameSync(logPath, `${logPath}.1`);
  } catch {
    // No log yet.
  }
}

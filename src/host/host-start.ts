/**
 * `pi-workflows host start`: starts `host run` detached (its own session and process group, so
 * it outlives the terminal), with stdout and stderr appended to `<stateDir>/host.log`, and waits
 * for its ready handshake. The log is rotated to `host.log.1` at each start once it passes its
 * byte budget, so it stays bounded.
 */
import { spawn } from "node:child_process";
import { closeSync, openSync, renameSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Readable } from "node:stream";
import * as v from "valibot";
import { ensureStateDir } from "../state/store.ts";
import { HostStartError } from "./host-main.ts";
import { readHostOptions } from "./host-options.ts";
import { type HostReadyMessage, HostReadyMessageSchema } from "../protocol/host-ready.ts";
import { READY_FD_ENV } from "./ready-handshake.ts";
import { type SelfCommand, selfCommand } from "../os/self-launch.ts";

export const HOST_LOG_FILE_NAME = "host.log";
export const DEFAULT_HOST_START_TIMEOUT_MS = 20_000;

export interface StartDetachedHostOptions {
  stateDir: string;
  env: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /** Defaults to `selfCommand(["host", "run"])`. */
  command?: SelfCommand;
}

/** Starts the host in the background; resolves with its epoch once it accepts commands. */
export async function startDetachedHost(
  options: StartDetachedHostOptions,
): Promise<{ epoch: number; pid: number }> {
  const stateDir = ensureStateDir(options.stateDir);
  const logPath = join(stateDir, HOST_LOG_FILE_NAME);
  rotateLog(logPath, readHostOptions(options.env).maxLogBytes);
  const logFd = openSync(logPath, "a", 0o600);
  const command = options.command ?? selfCommand(["host", "run"]);
  const timeoutMs = options.timeoutMs ?? DEFAULT_HOST_START_TIMEOUT_MS;
  let child;
  try {
    child = spawn(command.command, command.args, {
      detached: true,
      stdio: ["ignore", logFd, logFd, "pipe"],
      env: { ...options.env, PI_WORKFLOWS_STATE_DIR: stateDir, [READY_FD_ENV]: "3" },
    });
  } finally {
    closeSync(logFd);
  }
  const readyPipe = child.stdio[3] as Readable;
  try {
    const message = await readReady(readyPipe, child, timeoutMs);
    if (!message.ready) {
      throw new HostStartError(
        message.code === "alreadyRunning" ? "alreadyRunning" : "startFailed",
        message.message,
      );
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
  });
}

function rotateLog(logPath: string, maxBytes: number): void {
  try {
    if (statSync(logPath).size > maxBytes) renameSync(logPath, `${logPath}.1`);
  } catch {
    // No log yet.
  }
}

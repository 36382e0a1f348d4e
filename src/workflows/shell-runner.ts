/**
 * Runs one shell node command: no shell unless asked, its own process group, stdin, env and
 * cwd, output caps, line-based updates, and SIGTERM then SIGKILL to the whole group on abort or
 * on the command's own timeout. A supervisor (the worker) may attach the group to someone who
 * outlives this process (the host) right after spawn, and detach it once the group is gone.
 */
import type { Buffer } from "node:buffer";
import { spawn } from "node:child_process";
import { statSync } from "node:fs";
import process from "node:process";
import { resolve } from "node:path";
import { NodeFailure } from "./errors.ts";
import type { ShellCommand, ShellResult } from "./types.ts";

/** Per stream; both streams together stay well under the node output limit. */
export const DEFAULT_MAX_OUTPUT_CHARS = 200_000;
export const MAX_OUTPUT_CHARS = 1_000_000;
export const KILL_GRACE_MS = 1000;
const MAX_LINE_CHARS = 64 * 1024;

export interface RunShellOptions {
  signal: AbortSignal;
  onLine?: (line: string, stream: "stdout" | "stderr") => void;
  /** Every chunk of output as it arrives (the step's output files), uncapped. */
  onOutput?: OutputSink;
  killGraceMs?: number;
  processGroups?: ProcessGroupHooks;
}

export type OutputSink = (stream: "stdout" | "stderr", chunk: Uint8Array) => void;

/**
 * Lets a supervisor outside this process reap the command's process group if this process dies
 * first (a SIGKILLed worker cannot stop it itself).
 */
export interface ProcessGroupHooks {
  /**
   * Called right after spawn with the command's PID, which is also its process group. The run
   * waits for it before it feeds stdin or awaits the command; a rejection stops the group and
   * becomes the node's error.
   */
  started(pid: number): Promise<void>;
  /** Called once the group was signalled to death after the command ended; errors are ignored. */
  stopped(pid: number): Promise<void>;
}

export async function runShell(cmd: ShellCommand, options: RunShellOptions): Promise<ShellResult> {
  checkCommand(cmd);
  const args = cmd.args ?? [];
  const cwd = resolve(cmd.cwd ?? process.cwd());
  const cap = cmd.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  const started = Date.now();
  if (options.signal.aborted) throw options.signal.reason;
  checkCwd(cmd, cwd);
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(cmd.command, args, {
      cwd,
      env: { ...process.env, ...(cmd.env ?? {}) },
      shell: cmd.shell === true ? "/bin/sh" : typeof cmd.shell === "string" ? cmd.shell : false,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
  } catch (error) {
    // Some refusals (E2BIG, ENOTDIR) are thrown by spawn itself rather than emitted.
    throw startFailure(cmd, error as NodeJS.ErrnoException);
  }
  const streams = {
    stdout: { text: "", cut: false, line: "" },
    stderr: { text: "", cut: false, line: "" },
  };
  const onData = (name: "stdout" | "stderr") => (chunk: Buffer) => {
    const s = streams[name];
    options.onOutput?.(name, chunk);
    const text = chunk.toString("utf8");
    if (!s.cut) {
      const room = cap - s.text.length;
      if (text.length <= room) s.text += text;
      else {
        s.text += text.slice(0, room);
        s.cut = true;
      }
    }
    if (options.onLine) {
      s.line += text;
      let nl: number;
      while ((nl = s.line.indexOf("\n")) >= 0) {
        emitLine(s.line.slice(0, nl), name);
        s.line = s.line.slice(nl + 1);
      }
      if (s.line.length > MAX_LINE_CHARS) {
        emitLine(s.line, name);
        s.line = "";
      }
    }
  };
  const emitLine = (line: string, name: "stdout" | "stderr") => {
    options.onLine?.(line.replace(/\r$/, "").slice(0, MAX_LINE_CHARS), name);
  };
  child.stdout!.on("data", onData("stdout"));
  child.stderr!.on("data", onData("stderr"));
  child.stdin!.on("error", () => {}); // the command may exit without reading stdin
  // Listen at once: a spawn error must not become an uncaught 'error' event while we wait below.
  // The node ends when its direct child exits ('exit'), not when every holder of its output pipes
  // is gone ('close'): a background process it left (`sleep 300 &`, a dev server) would hold them.
  const exited = new Promise<{ code: number | null; signal: string | null; error?: Error }>(
    (done) => {
      child.once("error", (error) => done({ code: null, signal: null, error }));
      child.once("exit", (code, signal) => done({ code, signal }));
    },
  );
  const closed = new Promise<void>((done) => {
    child.once("close", () => done());
    child.once("error", () => done());
  });

  let stopReason: unknown = null;
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  const stop = (reason: unknown) => {
    if (stopReason !== null) return;
    stopReason = reason;
    signalGroup(child.pid, "SIGTERM");
    killTimer = setTimeout(
      () => signalGroup(child.pid, "SIGKILL"),
      options.killGraceMs ?? KILL_GRACE_MS,
    );
  };
  const onAbort = () => stop(options.signal.reason);
  options.signal.addEventListener("abort", onAbort, { once: true });
  const ownTimer = cmd.timeoutMs !== undefined
    ? setTimeout(
      () =>
        stop(
          new NodeFailure(
            "commandTimedOut",
            `Command timed out after ${cmd.timeoutMs} ms: ${cmd.command}`,
          ),
        ),
      cmd.timeoutMs,
    )
    : undefined;
  const hooks = options.processGroups;
  let attached = false;
  if (hooks && child.pid !== undefined) {
    try {
      await hooks.started(child.pid);
      attached = true;
    } catch (error) {
      stop(error);
    }
  }
  child.stdin!.end(cmd.stdin ?? "");

  const exit = await exited;
  options.signal.removeEventListener("abort", onAbort);
  clearTimeout(ownTimer);
  clearTimeout(killTimer);
  // The leader exited: what is left of its group does not outlive the node.
  await stopLeftovers(child, closed, options.killGraceMs ?? KILL_GRACE_MS);
  if (attached) await hooks!.stopped(child.pid!).catch(() => {});
  for (const name of ["stdout", "stderr"] as const) {
    if (streams[name].line.length > 0) emitLine(streams[name].line, name);
  }
  if (exit.error) throw startFailure(cmd, exit.error as NodeJS.ErrnoException);
  if (stopReason !== null) throw stopReason;
  const result: ShellResult = {
    command: cmd.command,
    args,
    cwd,
    stdout: streams.stdout.text + (streams.stdout.cut ? "\n[output truncated]" : ""),
    stderr: streams.stderr.text + (streams.stderr.cut ? "\n[output truncated]" : ""),
    exitCode: exit.code,
    signal: exit.signal,
    durationMs: Date.now() - started,
    stdoutTruncated: streams.stdout.cut,
    stderrTruncated: streams.stderr.cut,
  };
  if (exit.code !== 0 && !cmd.allowNonZeroExit) {
    const tail = result.stderr.trim().split("\n").slice(-3).join(" / ").slice(0, 500);
    throw new NodeFailure(
      "commandFailed",
      `Command failed: ${cmd.command} exited with ${
        exit.code === null ? `signal ${exit.signal}` : `code ${exit.code}`
      }${tail ? `: ${tail}` : ""}`,
    );
  }
  return result;
}

/** A missing working directory makes spawn fail ENOENT, which would read "command not found". */
function checkCwd(cmd: ShellCommand, cwd: string): void {
  const stat = statSync(cwd, { throwIfNoEntry: false });
  if (stat?.isDirectory()) return;
  // The directory as the workflow named it (relative to the project), not the resolved path.
  const named = cmd.cwd ?? ".";
  throw new NodeFailure(
    "invalidCommand",
    `Cannot run ${cmd.command}: its cwd "${named}" ${
      stat ? "is not a directory" : "does not exist"
    }`,
  );
}

function startFailure(cmd: ShellCommand, error: NodeJS.ErrnoException): NodeFailure {
  if (error.code === "ENOENT") {
    return new NodeFailure("commandNotFound", `Command not found: ${cmd.command}`);
  }
  if (error.code === "E2BIG") {
    return new NodeFailure(
      "invalidCommand",
      `Command could not start: ${cmd.command}: its arguments and environment are larger than ` +
        "the system allows (E2BIG); pass large data on stdin or in a file",
    );
  }
  const why = error.code === "EACCES" ? "it is not executable (EACCES)" : error.code;
  return new NodeFailure(
    "commandFailed",
    `Command could not start: ${cmd.command}: ${why ?? error.message}`,
  );
}

/**
 * After the command's direct child exited: SIGTERM to what is left of its process group, SIGKILL
 * once `graceMs` passed with the output pipes still held, and the pipes given up after as long
 * again (a process that left the group can hold them for ever). Output already written is read
 * to its end first when nothing else holds the pipes.
 */
async function stopLeftovers(
  child: ReturnType<typeof spawn>,
  closed: Promise<void>,
  graceMs: number,
): Promise<void> {
  signalGroup(child.pid, "SIGTERM");
  if (await settlesWithin(closed, graceMs)) {
    signalGroup(child.pid, "SIGKILL");
    return;
  }
  signalGroup(child.pid, "SIGKILL");
  if (await settlesWithin(closed, graceMs)) return;
  child.stdout?.destroy();
  child.stderr?.destroy();
}

/** True when `promise` settled within `ms`. */
async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((done) => timer = setTimeout(() => done(false), ms));
  const result = await Promise.race([promise.then(() => true as const), late]);
  clearTimeout(timer);
  return result;
}

function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

function checkCommand(cmd: ShellCommand): void {
  const bad = (detail: string): never => {
    throw new NodeFailure("invalidCommand", `Invalid shell command: ${detail}`);
  };
  if (typeof cmd !== "object" || cmd === null) bad("exec must return {command, args?, ...}");
  if (typeof cmd.command !== "string" || cmd.command.length === 0) {
    bad("command must be a non-empty string");
  }
  if (
    cmd.args !== undefined &&
    (!Array.isArray(cmd.args) || cmd.args.some((a) => typeof a !== "string"))
  ) {
    bad("args must be an array of strings");
  }
  if (
    cmd.env !== undefined &&
    (typeof cmd.env !== "object" || Object.values(cmd.env).some((e) => typeof e !== "string"))
  ) {
    bad("env values must be strings");
  }
  if (cmd.stdin !== undefined && typeof cmd.stdin !== "string") bad("stdin must be a string");
  if (
    cmd.shell !== undefined && typeof cmd.shell !== "boolean" &&
    (typeof cmd.shell !== "string" || cmd.shell.length === 0)
  ) {
    bad("shell must be true, false or the path of a shell program");
  }
  if (cmd.cwd !== undefined && typeof cmd.cwd !== "string") bad("cwd must be a string");
  for (const k of ["timeoutMs", "maxOutputChars"] as const) {
    const n = cmd[k];
    if (n !== undefined && (!Number.isInteger(n) || n < 0)) {
      bad(`${k} must be a non-negative integer`);
    }
  }
  if (cmd.maxOutputChars !== undefined && cmd.maxOutputChars > MAX_OUTPUT_CHARS) {
    bad(`maxOutputChars must be at most ${MAX_OUTPUT_CHARS}`);
  }
}

/**
 * A bounded JSONL driver for the real `pi --mode rpc`. Commands are serialized: each waits for
 * its `response` before the next is written (two prompts in one stdin chunk stall Pi 1.6.0, see
 * the Pi notes). Every stdout record is kept in order; waits take a deadline and an index to
 * search from, so a test can wait for "the next agent_settled after this prompt". Stdout is split
 * on LF only (never readline, which also splits on U+2028). Stopping closes stdin, then sends
 * SIGTERM and SIGKILL to the PID.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { PI_CLI, type PiSandbox } from "./pi-sandbox.ts";

export type RpcRecord = Record<string, unknown> & { type: string };

export interface RpcResponse extends RpcRecord {
  type: "response";
  id?: string;
  command: string;
  success: boolean;
  data?: unknown;
  error?: string;
}

export interface PiExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface PiRpc {
  readonly pid: number;
  /** Every record Pi printed on stdout, in order (responses included). */
  readonly records: readonly RpcRecord[];
  readonly exited: Promise<PiExit>;
  /** Sends one command and resolves with its response (commands never overlap). */
  command(
    command: Record<string, unknown> & { type: string },
    timeoutMs?: number,
  ): Promise<RpcResponse>;
  /** `prompt` (a slash command or text); resolves with the response, not the run's end. */
  prompt(message: string, timeoutMs?: number): Promise<RpcResponse>;
  /** The first record at index >= `from` matching `predicate`. */
  waitFor(
    predicate: (record: RpcRecord) => boolean,
    options?: { from?: number; timeoutMs?: number; what?: string },
  ): Promise<RpcRecord>;
  /** The next `agent_settled` at index >= `from`. */
  waitForSettled(from: number, timeoutMs?: number): Promise<RpcRecord>;
  /** `extension_ui_request` records (notify, setStatus, setWidget, dialogs) from `from` on. */
  uiRequests(from?: number): RpcRecord[];
  /** Pi's stderr so far (bounded). */
  stderr(): string;
  /** Orderly stop: close stdin, then SIGTERM, then SIGKILL, each after `graceMs`. */
  stop(graceMs?: number): Promise<PiExit>;
  /** Sends `signal` (default SIGKILL) to the PID and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<PiExit>;
}

export interface StartPiOptions {
  /** Working directory (default: the sandbox project). */
  cwd?: string;
  /** Resume or create this session id in the sandbox's session store (persistent). */
  sessionId?: string;
  /** `--no-session` when no `sessionId` is given (default true). */
  ephemeral?: boolean;
  /** Extra CLI arguments (e.g. `-e <file>`). */
  args?: string[];
  /** Extra environment on top of the sandbox's. */
  env?: Record<string, string>;
  /** Deadline for Pi to answer `get_state` after spawn. */
  readyTimeoutMs?: number;
}

const DEFAULT_COMMAND_TIMEOUT_MS = 30_000;
const DEFAULT_WAIT_TIMEOUT_MS = 30_000;
const MAX_STDERR_CHARS = 64 * 1024;

const live = new Set<PiRpc>();

/** Spawns `pi --mode rpc` in the sandbox and waits until it answers `get_state`. */
export async function startPi(sandbox: PiSandbox, options: StartPiOptions = {}): Promise<PiRpc> {
  const args = [
    PI_CLI,
    "--mode",
    "rpc",
    "--offline",
    "--no-context-files",
    "--no-skills",
    "--no-prompt-templates",
    "--no-themes",
  ];
  if (options.sessionId) args.push("--session-id", options.sessionId);
  else if (options.ephemeral !== false) args.push("--no-session");
  args.push(...(options.args ?? []));
  const child = spawn(process.execPath, args, {
    cwd: options.cwd ?? sandbox.project,
    env: { ...sandbox.env, ...options.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const pi = drive(child);
  try {
    const state = await pi.command({ type: "get_state" }, options.readyTimeoutMs ?? 30_000);
    if (!state.success) throw new Error(`pi get_state failed: ${state.error}`);
  } catch (error) {
    await pi.kill();
    throw new Error(`${(error as Error).message}\npi stderr: ${pi.stderr().slice(-2000)}`);
  }
  return pi;
}

/** Stops every Pi a test left running (afterEach/afterAll). */
export async function stopAllPi(): Promise<void> {
  await Promise.all([...live].map((pi) => pi.stop(2_000)));
}

function drive(child: ChildProcess): PiRpc {
  const records: RpcRecord[] = [];
  const waiters = new Set<() => void>();
  let stderr = "";
  let buffered = "";
  let exit: PiExit | null = null;
  let commandChain: Promise<unknown> = Promise.resolve();
  let counter = 0;
  const wake = () => {
    for (const waiter of waiters) waiter();
  };

  child.stdout!.setEncoding("utf8");
  child.stdout!.on("data", (chunk: string) => {
    buffered += chunk;
    let newline = buffered.indexOf("\n");
    while (newline !== -1) {
      let line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line.trim() !== "") {
        try {
          records.push(JSON.parse(line) as RpcRecord);
        } catch {
          records.push({ type: "unparsed", line });
        }
      }
      newline = buffered.indexOf("\n");
    }
    wake();
  });
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    if (stderr.length < MAX_STDERR_CHARS) {
      stderr += chunk.slice(0, MAX_STDERR_CHARS - stderr.length);
    }
  });
  // Pi exiting closes stdin under a pending write; that EPIPE is reported through `exited`.
  child.stdin!.on("error", () => {});
  const exited = new Promise<PiExit>((resolve) => {
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      live.delete(pi);
      wake();
      resolve(exit);
    });
  });

  const waitFor: PiRpc["waitFor"] = (
    predicate,
    { from = 0, timeoutMs = DEFAULT_WAIT_TIMEOUT_MS, what = "a matching record" } = {},
  ) =>
    new Promise((resolve, reject) => {
      const check = () => {
        for (let i = from; i < records.length; i++) {
          if (predicate(records[i])) return finish(() => resolve(records[i]));
        }
        if (exit) {
          finish(() =>
            reject(
              new Error(
                `pi exited (${JSON.stringify(exit)}) before ${what}: ${stderr.slice(-1000)}`,
              ),
            )
          );
        }
      };
      const timer = setTimeout(
        () =>
          finish(() => reject(new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`))),
        timeoutMs,
      );
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        waiters.delete(check);
        settle();
      };
      waiters.add(check);
      check();
    });

  const sendNow = async (
    command: Record<string, unknown> & { type: string },
    timeoutMs: number,
  ): Promise<RpcResponse> => {
    const id = command.id as string | undefined ?? `t${++counter}`;
    const from = records.length;
    child.stdin!.write(`${JSON.stringify({ ...command, id })}\n`);
    return await waitFor((record) => record.type === "response" && record.id === id, {
      from,
      timeoutMs,
      what: `the response to ${command.type}`,
    }) as RpcResponse;
  };

  const stopWith = async (signal: NodeJS.Signals): Promise<PiExit> => {
    if (exit) return exit;
    try {
      process.kill(child.pid!, signal);
    } catch {
      // Already gone; `exited` resolves.
    }
    return await exited;
  };

  const pi: PiRpc = {
    pid: child.pid!,
    records,
    exited,
    command(command, timeoutMs = DEFAULT_COMMAND_TIMEOUT_MS) {
      const run = commandChain.then(() => sendNow(command, timeoutMs));
      commandChain = run.catch(() => {});
      return run;
    },
    prompt(message, timeoutMs) {
      return pi.command({ type: "prompt", message }, timeoutMs);
    },
    waitFor,
    waitForSettled: (from, timeoutMs) =>
      waitFor((record) => record.type === "agent_settled", {
        from,
        timeoutMs,
        what: "agent_settled",
      }),
    uiRequests: (from = 0) => records.slice(from).filter((r) => r.type === "extension_ui_request"),
    stderr: () => stderr,
    async stop(graceMs = 5_000) {
      if (exit) return exit;
      child.stdin!.end();
      const bounded = (ms: number) =>
        Promise.race([exited, new Promise<null>((r) => setTimeout(() => r(null), ms).unref())]);
      if (await bounded(graceMs)) return exit!;
      try {
        process.kill(child.pid!, "SIGTERM");
      } catch {
        // Gone meanwhile.
      }
      if (await bounded(graceMs)) return exit!;
      return await stopWith("SIGKILL");
    },
    kill: (signal = "SIGKILL") => stopWith(signal),
  };
  live.add(pi);
  return pi;
}

/**
 * One `pi --mode rpc` child of a headless worker: spawned in its own process group (so stopping
 * it reaches every tool process it started, and never the worker), with four pipes: stdin for
 * RPC commands, stdout for RPC records (JSONL, split on LF only), stderr, and fd 3 for the bridge
 * extension. stdout and stderr are read continuously (Pi honours backpressure, so a stalled
 * reader would stall the model turn) and only a bounded tail of each is kept, in the user-only
 * workers directory. Commands are serialized: each waits for its response before the next is
 * written (two prompts in one stdin chunk stall Pi 1.6.0).
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { Duplex } from "node:stream";
import { FrameDecoder } from "../protocol/framing.ts";
import { identifyChildNow, type ProcessIdentity } from "../os/process-identity.ts";
import { stopProcessTree } from "../os/stop-group.ts";
import { NodeFailure } from "../workflows/errors.ts";
import { createOutputTail } from "./output-tail.ts";

/** Pi prints whole session messages in some records; larger ones are skipped, not buffered. */
const MAX_RECORD_BYTES = 8 * 1024 * 1024;
/** Kept in memory for the failure message: the start of stderr. */
const STDERR_MEMORY_BYTES = 8192;

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

export interface PiChildOptions {
  command: string;
  args: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Where the bounded tails go: `<dir>/<stem>.out|.err` (plus one older half each). */
  tail: { dir: string; stem: string; maxBytes: number };
}

export interface PiChild {
  readonly pid: number;
  /** PID and start time, read right after the fork; null if it died at once. */
  readonly identity: ProcessIdentity | null;
  /** The bridge's end is the child's fd 3. */
  readonly bridge: Duplex;
  readonly exited: Promise<PiExit>;
  /** Resolves once Pi's stdout and stderr are drained after its exit (bounded: 1 s after it). */
  readonly drained: Promise<void>;
  /** Calls `listener` with every RPC record Pi prints from now on; returns an unsubscribe. */
  onRecord(listener: (record: RpcRecord) => void): () => void;
  /** Sends one command and resolves with its response; rejects once Pi exited. */
  command(command: Record<string, unknown> & { type: string }): Promise<RpcResponse>;
  /** Writes a record that gets no response (`extension_ui_response`). */
  send(record: Record<string, unknown>): void;
  /**
   * Pi's first error line on stderr (bounded; see `firstErrorLine`), for a failure message: later
   * lines are advice, a stack or a version banner.
   */
  firstStderrError(): string;
  /** Stops the whole group: SIGTERM, SIGKILL after `graceMs`, then waits (bounded). */
  stop(graceMs: number): Promise<void>;
}

export function spawnPiChild(options: PiChildOptions): PiChild {
  let child: ChildProcess;
  try {
    child = spawn(options.command, [...options.args], {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe", "pipe"],
    });
  } catch (error) {
    throw unavailable(error);
  }
  if (child.pid === undefined) {
    // ENOENT, EACCES: Node reports them asynchronously, but there is no process to wait for.
    child.on("error", () => {});
    throw unavailable(null);
  }
  const pid = child.pid;
  const identity = identifyChildNow(child);
  const outTail = createOutputTail(
    options.tail.dir,
    options.tail.stem,
    ".out",
    options.tail.maxBytes,
  );
  const errTail = createOutputTail(
    options.tail.dir,
    options.tail.stem,
    ".err",
    options.tail.maxBytes,
  );

  const listeners = new Set<(record: RpcRecord) => void>();
  const responses = new Map<string, (response: RpcResponse) => void>();
  const decoder = new FrameDecoder({ maxBytes: MAX_RECORD_BYTES });
  child.stdout!.on("data", (chunk: Buffer) => {
    outTail.write(chunk);
    for (const frame of decoder.push(chunk)) {
      if (!frame.ok) continue;
      const record = frame.value as RpcRecord;
      if (typeof record !== "object" || record === null || typeof record.type !== "string") {
        continue;
      }
      if (record.type === "response" && typeof record.id === "string") {
        const settle = responses.get(record.id);
        responses.delete(record.id);
        settle?.(record as RpcResponse);
      }
      for (const listener of listeners) listener(record);
    }
  });
  let stderrMemory = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    errTail.write(chunk);
    if (stderrMemory.length < STDERR_MEMORY_BYTES) {
      stderrMemory = (stderrMemory + chunk.toString("utf8")).slice(0, STDERR_MEMORY_BYTES);
    }
  });
  // EPIPE after Pi exited: the exit is what matters.
  child.stdin!.on("error", () => {});
  const bridge = child.stdio[3] as Duplex;
  bridge.on("error", () => {});

  let gone = false;
  const exited = new Promise<PiExit>((resolve) => {
    child.once("exit", (code, signal) => {
      gone = true;
      resolve({ code, signal });
    });
    child.once("error", () => {
      gone = true;
      resolve({ code: null, signal: null });
    });
  });
  // Close our tails once stdout and stderr are drained, not at the exit (data may follow it).
  const closed = new Promise<void>((resolve) => {
    child.once("close", () => {
      outTail.close();
      errTail.close();
      resolve();
    });
  });
  // A grandchild holding the pipes open must not hold the failure message back for long.
  const drained = exited.then(() =>
    Promise.race([closed, new Promise<void>((resolve) => setTimeout(resolve, 1_000).unref())])
  );
  exited.then(() => {
    for (const settle of responses.values()) {
      settle({ type: "response", command: "exit", success: false, error: "Pi exited" });
    }
    responses.clear();
  });

  let sequence = 0;
  let chain: Promise<unknown> = Promise.resolve();
  const write = (record: Record<string, unknown>) => {
    if (!gone) child.stdin!.write(`${JSON.stringify(record)}\n`);
  };

  return {
    pid,
    identity,
    bridge,
    exited,
    drained,
    onRecord(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    command(command) {
      const next = chain.then(() =>
        new Promise<RpcResponse>((resolve) => {
          if (gone) {
            resolve({
              type: "response",
              command: command.type,
              success: false,
              error: "Pi exited",
            });
            return;
          }
          const id = `pwf-${++sequence}`;
          responses.set(id, resolve);
          write({ ...command, id });
        })
      );
      chain = next.catch(() => {});
      return next;
    },
    send: write,
    firstStderrError() {
      return firstErrorLine(stderrMemory);
    },
    async stop(graceMs) {
      if (identity !== null) await stopProcessTree(identity, { graceMs });
      else child.kill("SIGKILL");
      // Bounded: a stuck group (reported by stopProcessGroup) must not hold the worker.
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
    },
  };
}

function unavailable(error: unknown): NodeFailure {
  const code = (error as { code?: unknown } | null)?.code;
  return new NodeFailure(
    "piUnavailable",
    `Pi could not be started${typeof code === "string" ? ` (${code})` : ""}: check the Pi ` +
      "command recorded with the run (PI_WORKFLOWS_PI, or pi on PATH when the run started)",
  );
}

/**
 * The one line of a Pi message that says what is wrong, bounded to 300 characters. Pi's errors
 * run over several lines whose tail is advice and paths of its own docs ("Use /login ... See:
 * /…/docs/models.md"): the last line that starts with "Error" is the problem, else the first
 * non-empty line (a refused prompt's message, a model error).
 */
export function problemLine(text: string): string {
  const lines = text.split("\n").map((line) => line.trim()).filter(Boolean);
  const error = lines.findLast((line) => /^error\b/i.test(line));
  return (error ?? lines[0] ?? "").slice(0, 300);
}

/**
 * The first line of Pi's output that reports an error (`Error: ...`, or any line naming an
 * error), else its first non-empty line; bounded to 300 characters.
 */
export function firstErrorLine(text: string): string {
  const lines = text.split("\n").map((line) => line.trim()).filter(Boolean);
  const line = lines.find((candidate) => /^error\b/i.test(candidate)) ??
    lines.find((candidate) => /\berror\b/i.test(candidate)) ?? lines[0] ?? "";
  return line.slice(0, 300);
}

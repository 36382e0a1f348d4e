/**
 * The child kit's spawn: every supervised child (run worker, validation child, source resolver,
 * controller worker, controller resolver, compile cache warm-up) starts here from a description
 * of what it is. The kit
 * gives each the same process: `pi-workflows worker <mode>` in its own process group
 * (detached => setsid) and in the state directory, stdin closed, stdout/stderr piped into capped
 * files in the user-only `<stateDir>/workers`, fd 3 as the private NDJSON channel (a plain pipe,
 * not Node's `ipc`, so any runtime can speak it), and the run environment the description names.
 *
 * The start identity (PID plus start time) is read asynchronously right after the fork: under
 * the `ps` backend (macOS) a synchronous read would hold the host's event loop for a `ps` run.
 * Until `identified` settles the child cannot be signalled (retire-child.ts waits for it); a kind
 * whose messages are checked against the identity (a worker's `worker.ready`) reads its channel
 * only after. With `register`, the child enters the process registry as soon as it is
 * identified, and retireChild takes it out: one order for every kind.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { setPriority } from "node:os";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import {
  formatStartIdentity,
  identifyChild,
  type ProcessIdentity,
} from "../../../os/process-identity.ts";
import { selfCommand } from "../../../os/self-launch.ts";
import { baseRunEnvironment, type RunEnvironment } from "../../../protocol/run-environment.ts";
import type { HostContext } from "../../host-context.ts";
import type { ProcessRegistry, RegisteredProcess } from "../process-registry.ts";
import { captureStream } from "./captured-output.ts";
import { childEnvironment, compileCacheEnv } from "./child-environment.ts";
import { createFrameReader, type FrameReader } from "./frame-reader.ts";

export type ChildCommand = (args: string[]) => { command: string; args: string[] };

export interface ChildDescription {
  /** The `worker` subcommand's arguments: `["worker"]`, `["worker", "--resolve"]`, … */
  args: string[];
  /** Overrides `selfCommand` (tests, benchmarks of a bundled entry). */
  command?: ChildCommand;
  /**
   * The run environment it runs with (the run's recorded one). Without it, the host's
   * allowlisted base, never all of the host's environment: the host may have been started from
   * any terminal.
   */
  runEnvironment?: RunEnvironment | undefined;
  /** Added on top (tests' crash points, the state directory); never secrets. */
  extraEnv?: NodeJS.ProcessEnv;
  /** Names its captured output files (`<stem>.out`, `.err`); an epoch or request id. */
  logStem: string;
  /** Called once when a captured stream passes its bound (the caller stops the child). */
  onOutputExceeded(stream: "stdout" | "stderr", bytes: number): void;
  /** Its CPU priority (nice value); the host's own when absent. */
  priority?: number;
  /** Enter the process registry once identified (retireChild takes it out). */
  register?: { registry: ProcessRegistry; kind: RegisteredProcess["kind"]; runId: string | null };
}

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SupervisedChild {
  child: ChildProcess;
  /**
   * PID plus start time, once `identified` settled. Null before, and after it if the child died
   * at once (there is nothing to signal then).
   */
  identity: ProcessIdentity | null;
  /** Settles once the start identity was read (the child is registered by then). */
  identified: Promise<ProcessIdentity | null>;
  /** The registry entry the kit made, which retireChild removes. */
  registered: ProcessRegistry | null;
  /** The fd-3 channel. */
  channel: Duplex;
  /** Resolves once the child exited (its streams may still drain). */
  exited: Promise<ChildExit>;
  /** Resolves once both captured output files are closed. */
  captured: Promise<void>;
  /** Paths of the captured output files (for maintainers; never logged). */
  logFiles: { stdout: string; stderr: string };
  /**
   * Who hears that a captured stream passed its bound: set at spawn, replaced when a prepared
   * child changes hands (the epoch that owns it now is stopped, not the first one).
   */
  onOutputExceeded: (stream: "stdout" | "stderr", bytes: number) => void;
}

const readers = new WeakMap<SupervisedChild, FrameReader>();

/**
 * The one frame reader of a child's channel (created on first use), shared by every owner the
 * child has over its life: every kind reads its child's frames through it (backpressure: the
 * channel pauses while decoded frames wait).
 */
export function readerOf(spawned: SupervisedChild): FrameReader {
  let reader = readers.get(spawned);
  if (!reader) {
    reader = createFrameReader(spawned.channel);
    readers.set(spawned, reader);
  }
  return reader;
}

/** Starts the child. Throws a one-line error when the program cannot be spawned. */
export function spawnChild(
  ctx: Pick<HostContext, "stateDir" | "options">,
  description: ChildDescription,
): SupervisedChild {
  const logDir = join(ctx.stateDir, "workers");
  mkdirSync(logDir, { recursive: true, mode: 0o700 });
  const stem = description.logStem.replace(/[^A-Za-z0-9_.-]/g, "_");
  const logFiles = { stdout: join(logDir, `${stem}.out`), stderr: join(logDir, `${stem}.err`) };
  const command = (description.command ?? selfCommand)(description.args);
  const runEnvironment = description.runEnvironment ?? baseRunEnvironment(process.env);
  let child: ChildProcess;
  try {
    child = spawn(command.command, command.args, {
      detached: true,
      // stdout and stderr are pipes the host copies into the log files, capped at the write.
      stdio: ["ignore", "pipe", "pipe", "pipe"],
      env: childEnvironment(runEnvironment, {
        ...compileCacheEnv(ctx.stateDir, runEnvironment),
        ...description.extraEnv,
      }),
      // The child enters the run's project itself (a missing one is its error to report).
      cwd: ctx.stateDir,
    });
  } catch (error) {
    throw new Error(`Worker not started: ${error instanceof Error ? error.message : error}`, {
      cause: error,
    });
  }
  if (description.priority !== undefined && child.pid !== undefined) {
    try {
      setPriority(child.pid, description.priority);
    } catch {
      // Not permitted here: the child still runs, at the host's priority.
    }
  }
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
  const maxBytes = ctx.options.maxCapturedOutputBytes;
  const captures = (["stdout", "stderr"] as const).map((stream) =>
    captureStream(child[stream]!, logFiles[stream], maxBytes, cut(stream))
  );
  const exited = new Promise<ChildExit>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", () => resolve({ code: null, signal: null }));
  });
  const spawned: SupervisedChild = {
    child,
    identity: null,
    identified: Promise.resolve(null),
    registered: null,
    channel,
    exited,
    captured: Promise.all(captures.map((c) => c.done)).then(() => {}),
    logFiles,
    onOutputExceeded: description.onOutputExceeded,
  };
  spawned.identified = identify(spawned, description.register);
  return spawned;
}

/**
 * Waits for the child's start identity and names it in the kind's durable epoch record
 * (`record`: `run_workers`, `controller_workers`); the kind reads the channel only after: its
 * ready message is checked against the identity, and a restarted host reaps the child by that
 * record. Throws when the record cannot be written (`spawned.identity` is set by then).
 */
export async function nameChild(
  spawned: SupervisedChild,
  record: (process: { pid: number; startIdentity: string }) => void,
): Promise<void> {
  const identity = await spawned.identified;
  if (identity !== null) {
    record({ pid: identity.pid, startIdentity: formatStartIdentity(identity) });
  }
}

async function identify(
  spawned: SupervisedChild,
  register: ChildDescription["register"],
): Promise<ProcessIdentity | null> {
  let identity: ProcessIdentity | null = null;
  try {
    identity = await identifyChild(spawned.child);
  } catch {
    // Like an unreadable table (identifyChild answers null then): the child cannot be told
    // apart, so it is never signalled by PID, as one that died at once.
  }
  spawned.identity = identity;
  if (register && identity !== null) {
    register.registry.register({ identity, kind: register.kind, runId: register.runId });
    spawned.registered = register.registry;
  }
  return identity;
}

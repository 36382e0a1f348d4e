/**
 * `host start`, `host status` and `host stop`: clients of the host socket. `status` and `stop`
 * never start a host; `start` starts one only when none answers.
 */
import { ensureHost } from "../client/ensure-host.ts";
import { connectHost, type HostConnection } from "../client/host-connection.ts";
import { HostCommandError, receiptOf } from "../client/command-receipt.ts";
import { clientStateDir, hostSocketPath } from "../client/socket-path.ts";
import { HostBusyError, HostUnavailableError } from "../protocol/failures.ts";
import type { HostStatusReceipt } from "../protocol/host-operations.ts";
import { EXIT } from "./exit-codes.ts";
import { formatHostStatus, formatHostStopped } from "./format-host-status.ts";
import { type CliIo, printJson } from "./output.ts";
import type { CliCommand } from "./parse-command.ts";
import { waitFor } from "./wait-for.ts";

type HostCommand = Extract<CliCommand, { kind: "host" }>;

const STOP_TIMEOUT_MS = 30_000;

const NOT_ANSWERING = "Host not answering: a process accepts connections on the host socket but " +
  "did not answer (frozen or overloaded); stop that process, or wait: once its lease expires " +
  "the next command starts a new host";

const BUSY = "Host busy: it serves its limit of connections at once; retry shortly";

export async function runHostClientCommand(
  command: HostCommand,
  io: CliIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const stateDir = clientStateDir(env);
  const socketPath = hostSocketPath(stateDir);
  switch (command.action) {
    case "status":
      return await hostStatusCommand(stateDir, socketPath, command.json, io);
    case "stop":
      return await hostStopCommand(stateDir, socketPath, command.json, io);
    default:
      return await hostStartCommand(stateDir, socketPath, command.json, io, env);
  }
}

/** Why no status came back although something holds the socket. */
interface SilentHost {
  /** Something accepted the connection but never answered (a frozen or overloaded host). */
  accepted: boolean;
  /** The host answered that it serves its limit of connections. */
  busy: boolean;
}

/**
 * Connects and reads `host.status`; null when no host answers, with `silent` saying why when
 * something holds the socket (for `start` that is no host).
 */
async function readStatus(
  socketPath: string,
  silent?: SilentHost,
): Promise<{ connection: HostConnection; status: HostStatusReceipt } | null> {
  let connection: HostConnection;
  try {
    connection = await connectHost(socketPath);
  } catch (error) {
    if (error instanceof HostUnavailableError) return null;
    throw error;
  }
  try {
    const status = receiptOf("host.status", await connection.request("host.status"));
    return { connection, status };
  } catch (error) {
    const open = !connection.closed;
    connection.close();
    if (error instanceof HostBusyError) {
      if (silent) silent.busy = true;
      return null;
    }
    if (error instanceof HostUnavailableError) {
      if (silent && open) silent.accepted = true;
      return null;
    }
    // A stopping host answers `unavailable`: for status and start it is as good as gone.
    if (error instanceof HostCommandError && error.outcome === "unavailable") return null;
    throw error;
  }
}

async function hostStatusCommand(
  stateDir: string,
  socketPath: string,
  json: boolean,
  io: CliIo,
): Promise<number> {
  const silent = { accepted: false, busy: false };
  const found = await readStatus(socketPath, silent);
  if (!found) {
    const { readStoppedHostStatus } = await import("./stopped-host-status.ts");
    const stopped = readStoppedHostStatus(stateDir);
    if (silent.accepted) Object.assign(stopped, { state: "notAnswering", socket: "not answering" });
    if (silent.busy) Object.assign(stopped, { state: "busy", socket: "busy" });
    if (json) printJson(io, stopped);
    else io.out(formatHostStopped(stopped));
    return EXIT.hostUnavailable;
  }
  found.connection.close();
  if (json) printJson(io, found.status);
  else io.out(formatHostStatus(found.status));
  return EXIT.ok;
}

async function hostStopCommand(
  stateDir: string,
  socketPath: string,
  json: boolean,
  io: CliIo,
): Promise<number> {
  const silent = { accepted: false, busy: false };
  const found = await readStatus(socketPath, silent);
  if (!found && (silent.accepted || silent.busy)) {
    io.err(silent.busy ? BUSY : NOT_ANSWERING);
    return EXIT.hostUnavailable;
  }
  if (!found) {
    if (json) printJson(io, { stopped: true, wasRunning: false });
    else io.out("Host is not running");
    return EXIT.ok;
  }
  const { connection, status } = found;
  receiptOf("host.stop", await connection.request("host.stop"));
  // The host closes every connection once it has stopped accepting; then the socket goes.
  await waitFor(
    async () => connection.closed && (await readStatus(socketPath)) === null,
    STOP_TIMEOUT_MS,
    `Host stop timed out: epoch ${status.epoch} still answers after ${STOP_TIMEOUT_MS} ms`,
  );
  // The socket goes before the host's last writes (workers stopped, claim released).
  const { epochStillHoldsState } = await import("./host-released.ts");
  await waitFor(
    () => !epochStillHoldsState(stateDir, status.epoch),
    STOP_TIMEOUT_MS,
    `Host stop timed out: epoch ${status.epoch} still holds the state after ${STOP_TIMEOUT_MS} ms`,
  );
  if (json) printJson(io, { stopped: true, wasRunning: true, epoch: status.epoch });
  else io.out(`Host stopped (epoch ${status.epoch})`);
  return EXIT.ok;
}

/** How long `host start` keeps trying while a previous host still holds the epoch. */
const START_TIMEOUT_MS = 20_000;

async function hostStartCommand(
  stateDir: string,
  socketPath: string,
  json: boolean,
  io: CliIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const running = await readStatus(socketPath);
  if (running) {
    running.connection.close();
    report(io, json, running.status.epoch, true);
    return EXIT.ok;
  }
  // One start at a time per state directory (the start lock): a host another client started at
  // the same moment is as good as our own.
  const connection = await ensureHost({
    env,
    stateDir,
    startTimeoutMs: START_TIMEOUT_MS,
    onWait: (line) => io.err(line),
  });
  try {
    const status = receiptOf("host.status", await connection.request("host.status"));
    report(io, json, status.epoch, false);
  } finally {
    connection.close();
  }
  return EXIT.ok;
}

function report(io: CliIo, json: boolean, epoch: number, alreadyRunning: boolean): void {
  if (json) printJson(io, { started: !alreadyRunning, alreadyRunning, epoch });
  else {io.out(
      alreadyRunning ? `Host already running (epoch ${epoch})` : `Host started (epoch ${epoch})`,
    );}
}

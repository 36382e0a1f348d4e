/**
 * `pi-workflows host run`: the host process from start to exit.
 *
 * Start: take the global host claim (epoch + 1; refused while another live host holds it), judge
 * a leftover socket file (refuse if a live host answers on it, else remove it), recover, then
 * listen user-only and accept commands. The socket and the claim therefore always agree: nobody
 * answers on the socket without holding the epoch.
 * Run: renew the host claim from a timer (losing it means stop accepting and exit), and exit
 * after the idle period once no client, worker, wake or unsettled work keeps the host busy.
 * Stop (SIGTERM, SIGINT, `host.stop`, idle): stop accepting, answer what is in flight, shut the
 * supervision down, release the claim, remove the socket.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { type Clock, type IdSource, randomIds, systemClock } from "../base/clock.ts";
import { releaseHostClaim } from "../state/host-claim.ts";
import {
  closeStateStore,
  ensureStateDir,
  openStateStore,
  resolveStateDir,
} from "../state/store.ts";
import { DEADLINE_KINDS } from "./deadline-kinds.ts";
import { createDeadlineTimer, type DeadlineTimer } from "./deadline-timer.ts";
import { createSessionWatch } from "./session-watch.ts";
import { createScheduleFirer, type ScheduleFirer } from "./schedule-firer.ts";
import { HostStartError, isBadSetting } from "../protocol/host-ready.ts";
import { VERSION } from "../base/version.ts";
import { readSupervisionOptions } from "./supervision-options.ts";
import { readControllerOptions } from "./controllers/options.ts";
import {
  createCommandHandler,
  frameRejectedResponse,
  hostBusyResponse,
  responseFailedResponse,
} from "./command-dispatch.ts";
import { createHostLog, logError, oneLine } from "./host-log.ts";
import { createCheckpointRunner } from "../state/checkpoint-runner.ts";
import { readHostOptions } from "./host-options.ts";
import type { HostPhase, HostRuntime } from "./host-runtime.ts";
import { startIdleCheck } from "./idle-check.ts";
import { startClaimRenewal } from "./claim-renewal.ts";
import { handleStopSignals } from "./stop-signals.ts";
import { takeHostClaim } from "./take-host-claim.ts";
import { createRetentionRunner } from "./retention-runner.ts";
import { openReadyChannel } from "./ready-handshake.ts";
import {
  listenUserOnly,
  probeSocket,
  removeOwnSocket,
  type SocketIdentity,
} from "./socket-listener.ts";
import { createSocketServer, type HandledFrame, type SocketServer } from "./socket-server.ts";
import { createSupervision, type Supervision, type SupervisionExtras } from "./host-supervision.ts";
import { chooseProcessBackend, processBackendUnsupported } from "../os/process-backend.ts";

export const SOCKET_FILE_NAME = "host.sock";

export { HostStartError };

export interface RunHostOptions {
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  ids?: IdSource;
  /** Where log lines go (stderr by default). */
  writeLog?: (line: string) => void;
  /** Install SIGTERM/SIGINT handlers (the CLI does; in-process tests do not). */
  handleSignals?: boolean;
  /**
   * Called with the host-side time (ms) of each request answered synchronously (the reads):
   * from the decoded frame to the response object (benchmarks: `npm run bench -- load`).
   */
  onServed?: (operation: string, ms: number) => void;
  /**
   * An embedder's children (the test kit, src/testing): the worker command and extra child
   * environment. Default: this same program and nothing extra.
   */
  supervision?: SupervisionExtras;
  /**
   * Called once the host serves its socket, with what an embedder that runs the host in its own
   * process needs (the test kit moves its virtual clock to the next deadline, then re-arms).
   */
  onReady?: (host: ReadyHost) => void;
}

/** What `onReady` hands an in-process embedder. */
export interface ReadyHost {
  epoch: number;
  socketPath: string;
  deadlines: DeadlineTimer;
}

/** Runs the host until it stops. Resolves with the reason; rejects with `HostStartError`. */
export async function runHost(options: RunHostOptions = {}): Promise<string> {
  const env = options.env ?? process.env;
  const ready = openReadyChannel(env);
  try {
    const host = await startHost(options, env);
    ready.send({ ready: true, epoch: host.epoch, pid: process.pid });
    options.onReady?.({
      epoch: host.epoch,
      socketPath: host.socketPath,
      deadlines: host.deadlines,
    });
    host.afterReady();
    return await host.stopped;
  } catch (error) {
    const code = error instanceof HostStartError
      ? error.code
      : isBadSetting(error)
      ? "badSetting"
      : "startFailed";
    ready.send({ ready: false, code, message: oneLine(error).slice(0, 4000) });
    throw error instanceof HostStartError ? error : new HostStartError(code, oneLine(error));
  }
}

interface StartedHost {
  epoch: number;
  socketPath: string;
  deadlines: DeadlineTimer;
  stopped: Promise<string>;
  /** Background work that must not delay readiness (the compile cache warm-up). */
  afterReady(): void;
}

async function startHost(options: RunHostOptions, env: NodeJS.ProcessEnv): Promise<StartedHost> {
  const hostOptions = readHostOptions(env);
  const supervisionOptions = readSupervisionOptions(env);
  const controllerOptions = readControllerOptions(env);
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? randomIds;
  const log = createHostLog({
    clock,
    maxBytes: hostOptions.maxLogBytes,
    write: options.writeLog ?? ((line) => process.stderr.write(line)),
  });
  // A bad PI_WORKFLOWS_PROCESS_BACKEND is a setting like those above (badSetting), not a platform.
  if (process.platform !== "win32") chooseProcessBackend(env);
  const unsupported = await processBackendUnsupported(process.platform, env);
  if (unsupported) throw new HostStartError("startFailed", unsupported);
  const stateDir = ensureStateDir(resolveStateDir(env));
  const socketPath = join(stateDir, SOCKET_FILE_NAME);
  // A damaged file is refused before anything is served (StateDamagedError says what to do).
  const store = openStateStore({ stateDir, clock, ids, checkIntegrity: true });
  const ownerId = `host-${process.pid}-${randomUUID().slice(0, 8)}`;
  const sessions = createSessionWatch(store);
  store.afterCommit = () => sessions.poke();
  const claim = await takeHostClaim({
    store,
    socketPath,
    ownerId,
    ids,
    ttlMs: hostOptions.hostClaimTtlMs,
    log,
  });
  const { epoch } = claim;

  const checkpointRunner = createCheckpointRunner(store, {
    onProblem: (message) => log("checkpoint.threadFailed", { error: message }),
  });
  const retention = createRetentionRunner({
    store,
    stateDir,
    log,
    intervalMs: hostOptions.retentionIntervalMs,
    now: () => clock.now(),
    checkpointRunner,
    working: () => working(),
  });

  let phase: HostPhase = "running";
  let listening = false;
  let socketIdentity: SocketIdentity | null = null;
  let socketServer: SocketServer | null = null;
  let supervision: Supervision | null = null;
  let deadlines: DeadlineTimer | null = null;
  let scheduleFirer: ScheduleFirer | null = null;
  const timers: NodeJS.Timeout[] = [];
  let removeSignalHandlers = () => {};
  let resolveStopped!: (reason: string) => void;
  const stopped = new Promise<string>((resolve) => (resolveStopped = resolve));
  let stopping: Promise<void> | null = null;

  // The shutdown order: stop accepting, answer what is in flight, shut the supervision down,
  // then give up the epoch and the socket.
  const stop = (reason: string, claimLost = false): Promise<void> => {
    stopping ??= (async () => {
      phase = "stopping";
      log("host.stopping", { epoch, reason });
      for (const timer of timers) clearInterval(timer);
      deadlines?.stop();
      scheduleFirer?.stop();
      retention.stop();
      listening = false;
      // Held long polls and verdict waits answer now, so the socket can drain.
      sessions.close();
      await socketServer?.close({ abandon: claimLost }).catch(() => {});
      await supervision?.shutdown().catch((error) => {
        log("host.shutdownError", { error: logError(error) });
      });
      // The epoch is renewed until here: the shutdown may wait for external nodes.
      renewal.stop();
      // The socket goes while this host still holds the epoch, so no successor can have created
      // its own yet; after a claim loss a successor may exist, so the file is left alone.
      if (!claimLost) {
        if (socketIdentity) removeOwnSocket(socketIdentity);
        try {
          releaseHostClaim(store, renewal.claim);
        } catch {
          // Lost meanwhile: the next host takes over after expiry.
        }
      }
      await checkpointRunner.close();
      closeStateStore(store);
      removeSignalHandlers();
      log("host.stopped", { epoch, reason });
      resolveStopped(reason);
    })();
    return stopping;
  };

  // Renewal starts before recovery so a long recovery cannot let the lease lapse.
  const renewal = startClaimRenewal({
    store,
    clock,
    log,
    claim,
    ttlMs: hostOptions.hostClaimTtlMs,
    renewMs: hostOptions.hostClaimRenewMs,
    running: () => phase === "running",
    onLost: () => void stop("claimLost", true),
  });
  if (options.handleSignals) {
    removeSignalHandlers = handleStopSignals({
      log,
      epoch,
      stopping: () => stopping !== null,
      stop: (signal) => void stop(signal),
    });
  }

  try {
    // Holding the epoch, this host is the one: a predecessor that still answers (it resumed after
    // its lease lapsed) has been fenced and exits at its next renewal, so its socket path is
    // taken over rather than the start given up.
    if ((await probeSocket(socketPath, 1000)) === "live") {
      log("host.socketTakenOver", { epoch });
    }
    const schedules = createScheduleFirer({
      store,
      log,
      supervision: () => supervision!,
      deadlinesChanged: () => deadlines?.changed(),
    });
    scheduleFirer = schedules;
    const runtime: HostRuntime = {
      store,
      clock,
      ids,
      epoch,
      ownerId,
      get supervision() {
        return supervision!;
      },
      get deadlines() {
        return deadlines!;
      },
      sessions,
      schedules,
      log,
      retention,
      version: VERSION,
      phase: () => phase,
      holdsEpoch: renewal.holdsEpoch,
      socketAvailable: () => listening,
      requestStop: (reason) => void stop(reason),
    };
    supervision = createSupervision({
      store,
      clock,
      ids,
      stateDir,
      hostEpoch: epoch,
      hostOwnerId: ownerId,
      log,
      options: supervisionOptions,
      deadlinesChanged: () => deadlines?.changed(),
      controllerOptions,
    }, options.supervision);
    deadlines = createDeadlineTimer({
      store,
      clock,
      ids,
      ownerId,
      log,
      wake: () => supervision!.wake(),
    }, [...DEADLINE_KINDS, schedules.deadline]);
    await supervision.recover();
    // Deadlines that fell due while no host ran are applied before any other work is scheduled
    // and before commands arrive (recovery step 8); then the timer waits for the next one.
    deadlines.start();
    supervision.start();
    // Firings a previous host recorded but did not settle (and those start-up just recorded).
    schedules.start();
    socketServer = createSocketServer({
      handle: timedHandler(createCommandHandler(runtime), options.onServed),
      frameRejected: (error) => frameRejectedResponse(epoch, error),
      busy: (limit) => hostBusyResponse(epoch, limit),
      responseFailed: (response, error) => responseFailedResponse(epoch, response, error),
      log,
      partialFrameMs: hostOptions.partialFrameMs,
    });
    socketIdentity = await listenUserOnly(socketServer.server, socketPath);
    listening = true;
  } catch (error) {
    await stop("startFailed");
    throw error;
  }
  if (phase !== "running") throw new HostStartError("startFailed", "Host stopped while starting");

  // Work in hand, as opposed to work due later (a deadline, a controller's next reconcile): a
  // client, a worker, a resolver or validation child, a run to launch now.
  const working = () => socketServer!.connectionCount() > 0 || supervision!.hasWorkNow();
  timers.push(startIdleCheck({
    clock,
    idleMs: hostOptions.idleMs,
    running: () => phase === "running",
    busy: () => working() || supervision!.hasPendingWork() || deadlines!.hasPending(),
    working,
    retention,
    onIdle: () => void stop("idle"),
  }));

  log("host.ready", { epoch, idleMs: hostOptions.idleMs });
  return {
    epoch,
    socketPath,
    deadlines: deadlines!,
    stopped,
    afterReady: () => {
      if (phase === "running") supervision!.warmCompileCache();
    },
  };
}

function timedHandler(
  handle: (value: unknown) => HandledFrame | Promise<HandledFrame>,
  onServed: RunHostOptions["onServed"],
): (value: unknown) => HandledFrame | Promise<HandledFrame> {
  if (onServed === undefined) return handle;
  return (value) => {
    const started = performance.now();
    const handled = handle(value);
    if (!(handled instanceof Promise)) {
      const operation = (value as { operation?: unknown } | null)?.operation;
      onServed(typeof operation === "string" ? operation : "?", performance.now() - started);
    }
    return handled;
  };
}

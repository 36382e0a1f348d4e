/**
 * A run worker's life in the host's memory, in one typed state with its transitions (the durable
 * record is the `run_workers` row). Two things change over an epoch, and only through the
 * functions below:
 *
 *   phase  what the process is doing:
 *            launching  spawned, envelope sent; no `worker.ready` yet: it holds the start-up
 *                       deadline (the kit's, disarmed when the phase ends); `recordedLive`
 *                       when its launch claim recorded it live already
 *            live       `worker.ready` committed
 *            kept       its epoch parked and the host keeps the process as the run's prepared
 *                       child: the epoch ends without waiting for (or stopping) the process
 *            stopping   the host stops it for `reason` (its group got SIGTERM, SIGKILL after the
 *                       grace, `stopped` once done); `kept` when it was kept before
 *            gone       the epoch is recorded and the run settled (worker-epoch.ts)
 *   claim  the run claim the host took for it:
 *            held       the host holds it for this worker
 *            released   released by the host (a command, a deadline, a shutdown park) or lost
 *            settled    a terminal, park or block message committed, which released it: the exit
 *                       that follows is normal
 */
import { type ChildDeadline, enterPhase } from "./children/child-deadline.ts";

/**
 * Why the host stops (or stopped) a worker. None while nobody asked it to stop; the exit is then
 * a completion (after a terminal or park message) or a crash.
 */
export type StopReason =
  | "paused"
  | "cancelled"
  | "timedOut"
  | "startupTimedOut"
  | "boundaryTimedOut"
  | "outputExceeded"
  | "memoryExceeded"
  | "protocolRejected"
  | "claimLost"
  | "shutdown";

export type WorkerPhase =
  | { name: "launching"; recordedLive: boolean; startup: ChildDeadline | null }
  | { name: "live" }
  | { name: "kept" }
  | { name: "stopping"; reason: StopReason; kept: boolean; stopped: Promise<void> }
  | { name: "gone" };

export type ClaimHold = "held" | "released" | "settled";

export interface WorkerLife {
  phase: WorkerPhase;
  claim: ClaimHold;
}

type Worker = { life: WorkerLife };

/**
 * `recordedLive`: the epoch was recorded `live` with its launch claim (a prepared process
 * launched right after it accepted a submission, accepted-launch.ts): its `worker.ready` then
 * commits nothing.
 */
export function launchingLife(recordedLive: boolean): WorkerLife {
  return { phase: { name: "launching", recordedLive, startup: null }, claim: "held" };
}

/** Whether the epoch was recorded `live` with its launch claim (see launchingLife). */
export function launchedLive(worker: Worker): boolean {
  const { phase } = worker.life;
  return phase.name === "launching" && phase.recordedLive;
}

/** `worker.ready` committed. */
export function markLive(worker: Worker): void {
  if (worker.life.phase.name === "launching") enterPhase(worker.life, { name: "live" });
}

/** Whether `worker.ready` is still awaited (nothing stopped it meanwhile either). */
export function isLaunching(worker: Worker): boolean {
  return worker.life.phase.name === "launching";
}

/**
 * The host stops it: true when `reason` is the first (later reasons are ignored); only then
 * `stopGroup` runs (worker-stops.ts).
 */
export function beginStop(
  worker: Worker,
  reason: StopReason,
  stopGroup: () => Promise<void>,
): boolean {
  const { phase } = worker.life;
  if (phase.name === "stopping" || phase.name === "gone") return false;
  const kept = phase.name === "kept";
  enterPhase(worker.life, { name: "stopping", reason, kept, stopped: stopGroup() });
  return true;
}

/** Resolves once the group stop the host began (if it began one) is done. */
export function groupStopped(worker: Worker): Promise<void> {
  const { phase } = worker.life;
  return phase.name === "stopping" ? phase.stopped : Promise.resolve();
}

/** Why the host stops (or stopped) it; null while nobody asked it to stop. */
export function stopReasonOf(worker: Worker): StopReason | null {
  const { phase } = worker.life;
  return phase.name === "stopping" ? phase.reason : null;
}

/** The epoch parked and the host keeps the process as the run's prepared child. */
export function keep(worker: Worker): void {
  const { phase } = worker.life;
  if (phase.name === "launching" || phase.name === "live") {
    enterPhase(worker.life, { name: "kept" });
  }
}

export function isKept(worker: Worker): boolean {
  const { phase } = worker.life;
  return phase.name === "kept" || phase.name === "stopping" && phase.kept;
}

/** Its epoch settled the run and nothing stops it: its goodbye (`worker.exiting`) comes next. */
export function awaitsGoodbye(worker: Worker): boolean {
  return isSettled(worker) && !isKept(worker) && stopReasonOf(worker) === null;
}

/** The epoch is recorded and the run settled. */
export function markGone(worker: Worker): void {
  enterPhase(worker.life, { name: "gone" });
}

/** The claim was released by the host or found lost (a settled run stays settled). */
export function releaseClaim(worker: Worker): void {
  if (worker.life.claim === "held") worker.life.claim = "released";
}

/** The run reached a durable end for this epoch; the state transition released the claim. */
export function markSettled(worker: Worker): void {
  worker.life.claim = "settled";
}

/**
 * Back to `hold`, the claim state read before a transaction that rolled back (messages proposed
 * ahead, speculative-start.ts): the memory follows the database.
 */
export function restoreClaim(worker: Worker, hold: ClaimHold): void {
  worker.life.claim = hold;
}

export function holdsClaim(worker: Worker): boolean {
  return worker.life.claim === "held";
}

export function isSettled(worker: Worker): boolean {
  return worker.life.claim === "settled";
}

/** Released without a durable end of the run (a command, a deadline, a loss). */
export function isReleasedUnsettled(worker: Worker): boolean {
  return worker.life.claim === "released";
}

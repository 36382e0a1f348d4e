/**
 * The host's in-memory record of one worker epoch, from spawn to exit. The durable record is the
 * `run_workers` row; this holds what only the live host knows (timers, the child, why it stops).
 */
import type { Claim } from "../../state/claims.ts";
import type { ProcessIdentity } from "../../os/process-identity.ts";
import type { SupervisedChild } from "./children/spawn-child.ts";
import type { FactsStream } from "../worker-messages/facts-stream.ts";

/**
 * Why the host stops (or stopped) a worker. `null` while nobody asked it to stop; the exit is
 * then a completion (after a terminal or park message) or a crash.
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

export interface OpenAttempt {
  attemptId: string;
  nodeId: string;
  effect: "pure" | "external";
  deadlineAt: number | null;
}

export interface ActiveWorker {
  runId: string;
  workerEpoch: string;
  generation: number;
  /** The run claim the host holds for this worker. */
  claim: Claim;
  spawned: SupervisedChild;
  /** Read after the spawn (launch-worker.ts identifyWorker); null until then, or if it died. */
  identity: ProcessIdentity | null;
  /** `worker.ready` was accepted. */
  ready: boolean;
  /**
   * The epoch was recorded `live` with its launch claim (a prepared process launched right
   * after it accepted a submission): `worker.ready` then commits nothing.
   */
  liveAtLaunch: boolean;
  /** A terminal, park or block message committed: the exit that follows is normal. */
  settled: boolean;
  /**
   * The epoch ended (parked on an interactive request) and the host kept the process as the
   * run's prepared child: its exit handling records the epoch without waiting for, or stopping,
   * the process.
   */
  kept: boolean;
  /** The claim was released by the host (commit before stop) or found lost. */
  claimReleased: boolean;
  stopReason: StopReason | null;
  /** Diagnostic for the epoch record (bounded, no payloads). */
  diagnostic: string | null;
  openAttempt: OpenAttempt | null;
  /** The run facts still to be sent after `worker.ready`, or null. */
  factsStream: FactsStream | null;
  /**
   * Direct children the worker registered (`process.register`): each leads its own process
   * group, and the host reaps it if the worker exits first. Keyed by `pid:starttime`; the
   * durable copy is `worker_child_groups`.
   */
  children: Map<string, ProcessIdentity>;
  timers: Set<ReturnType<typeof setTimeout>>;
  /** Resolves when exit handling (epoch record, run follow-up) is complete. */
  done: Promise<void>;
}

/**
 * The host's in-memory record of one worker epoch, from spawn to exit. The durable record is the
 * `run_workers` row; this holds what only the live host knows (timers, the child, why it stops).
 */
import type { Claim } from "../../state/claims.ts";
import type { ProcessIdentity } from "../../os/process-identity.ts";
import type { SupervisedChild } from "./children/spawn-child.ts";
import type { FactsStream } from "../worker-messages/facts-stream.ts";
import type { WorkerLife } from "./worker-life.ts";
import type { Timers } from "./children/timers.ts";

export type { StopReason } from "./worker-life.ts";

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
  /**
   * Settles once its start identity is named in its epoch record (a prepared process was named
   * with the claim): its channel is read only then. Never rejects: a record that cannot be
   * written is logged (`worker.record_failed`) and the worker runs unrecorded.
   */
  named: Promise<void>;
  /** Its phase and claim, changed only by worker-life.ts's transitions. */
  life: WorkerLife;
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
  timers: Timers;
  /** Resolves when exit handling (epoch record, run follow-up) is complete. */
  done: Promise<void>;
}

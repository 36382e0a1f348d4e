/**
 * What every room of the host's back half shares: the host context each part runs with (the
 * store, clock, ids, epoch, log, tunables), the supervision tunables (defaults and env names in
 * supervision-options.ts), and what a source resolver is asked and answers. The process
 * supervision (supervision/), the run scheduling (runs/), the controller scheduling
 * (controllers/) and the message handlers (worker-messages/, controller-messages/) all take it;
 * host-supervision.ts joins the first three into the host's `Supervision`.
 */
import type { Clock, IdSource } from "../base/clock.ts";
import type { StateStore } from "../state/store.ts";
import type { RunEnvironment } from "../protocol/run-environment.ts";

export interface HostContext {
  store: StateStore;
  clock: Clock;
  ids: IdSource;
  /** The user-only state directory (worker logs live under it). */
  stateDir: string;
  /** The host epoch this process holds; every claim it takes is tagged with it. */
  hostEpoch: number;
  /** Owner id of this host process for claims (never a secret). */
  hostOwnerId: string;
  /** Bounded, privacy-safe log line (no tokens, payloads, prompts or paths). */
  log(event: string, fields?: Record<string, string | number | boolean | null>): void;
  /** Tunables; every field has a documented default in supervision-options.ts. */
  options: SupervisionOptions;
  /**
   * Call after committing a new or moved deadline of a run that waits without a worker (a
   * checkpoint, a human decision, an interactive request): the host deadline timer re-arms.
   */
  deadlinesChanged?(): void;
}

export interface SupervisionOptions {
  /** Runs executing at once. */
  maxConcurrentWorkers: number;
  /** Run claim lease length. */
  claimTtlMs: number;
  /** How often the host renews live run claims from its timer (backup to write renewal). */
  claimRenewMs: number;
  /** Deadline for `worker.ready` after spawn. */
  workerStartupMs: number;
  /** SIGTERM to SIGKILL escalation. */
  killGraceMs: number;
  /** Captured stdout/stderr bytes per worker epoch. */
  maxCapturedOutputBytes: number;
  /**
   * Deadline on workflow code that runs between attempts (routing, `timeoutMs` callbacks,
   * `presentationPrompt`): from one closed attempt to the next boundary.
   */
  boundaryMs: number;
  /** How long a graceful stop waits for in-flight external nodes to reach a boundary. */
  stopWaitMs: number;
  /** Source resolvers running at once; more `run.start` requests wait their turn. */
  maxConcurrentResolvers: number;
  /** Resident memory (MiB) a worker may use before the host stops it. */
  maxWorkerMemoryMb: number;
  /** Total MiB of captured worker and resolver output kept in `<stateDir>/workers`. */
  maxWorkerLogsMb: number;
  /**
   * Run processes kept after an epoch parked on an interactive request, to validate its
   * submission and run the next epoch without a process start (prepared-children.ts).
   */
  maxPreparedChildren?: number;
  /** How long such a process waits for a submission before the host stops it. */
  preparedIdleMs?: number;
}

export interface ResolveRequest {
  /** Workflow name, `builtin:<id>`, or a path (absolute, or relative to `cwd`). */
  workflow: string;
  /** Raw input before the workflow's `input` normalizer. */
  input: unknown;
  /** Canonical project path the run belongs to; the resolver runs in it. */
  cwd: string;
  /** The run environment the resolver runs with (default: the host's allowlisted base). */
  env?: RunEnvironment;
}

export type { ResolveResult } from "../protocol/resolve-messages.ts";

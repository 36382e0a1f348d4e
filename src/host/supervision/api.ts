/**
 * The seam between the host's front half (lifecycle, socket, commands: src/host/*.ts) and its
 * back half (scheduler, worker supervision, recovery: src/host/supervision/*). The host main
 * creates one `Supervision` after it holds the host epoch and before it accepts commands.
 */
import type { Clock, IdSource } from "../../base/clock.ts";
import type { Claim } from "../../state/claims.ts";
import type { StateStore } from "../../state/store.ts";
import type { ResolveResult } from "../../protocol/resolve-messages.ts";
import type { RunEnvironment } from "../../protocol/run-environment.ts";
import type { ControllerSupervision } from "./controllers/api.ts";
import type { ControllerOptions } from "./controllers/options.ts";

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
  /** Tunables; every field has a documented default in supervision/options.ts. */
  options: SupervisionOptions;
  /**
   * Call after committing a new or moved deadline of a run that waits without a worker (a
   * checkpoint, a human decision, an interactive request): the host deadline timer re-arms.
   */
  deadlinesChanged?(): void;
  /** Controller tunables (controllers/options.ts); the defaults when absent. */
  controllerOptions?: ControllerOptions;
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

export type { ResolveResult } from "../../protocol/resolve-messages.ts";

export interface Supervision {
  /** Runs the spec's recovery steps 2-10, in order, before commands are accepted. */
  recover(): Promise<void>;
  /** Starts the scheduler and renewal timers. */
  start(): void;
  /**
   * Once the host reported ready: warms a new compile cache in a background child that nothing
   * waits for (compile-cache-warmup.ts).
   */
  warmCompileCache(): void;
  /** Called after a command made a run claimable (start, resume): schedule promptly. */
  wake(): void;
  /**
   * This host's own claim of `runId` (held for its live worker), or null: pause and cancel
   * release exactly this claim (owner, token hash, generation, epoch), never a lookalike.
   */
  claimOf(runId: string): Claim | null;
  /**
   * Stops the fenced worker group of a run whose claim the caller has already released in the
   * same transaction as its command receipt (pause, cancel). Resolves once the group is gone.
   */
  stopRun(runId: string, reason: "paused" | "cancelled"): Promise<void>;
  /**
   * Starts (or joins) the supervised validation child of a `validating` interactive submission;
   * resolves once its verdict is committed (or the host shuts down).
   */
  validateSubmission(submissionId: string): Promise<void>;
  /**
   * Holds provider credentials for a headless run's Pi children, in memory only (a start or a
   * resume supplies them; run-credentials.ts).
   */
  supplyCredentials(runId: string, credentials: RunEnvironment): void;
  /** Validates a workflow reference and input in a supervised source-resolver child. */
  resolve(request: ResolveRequest): Promise<ResolveResult>;
  /** Controllers: resolver, scheduler and workers (controllers/scheduler.ts). */
  readonly controllers: ControllerSupervision;
  activeWorkerCount(): number;
  /** True while a worker, resolver, scheduled wake or unsettled work keeps the host alive. */
  hasPendingWork(): boolean;
  /** Stops scheduling, parks live runs at their last durable boundary, stops all groups. */
  shutdown(): Promise<void>;
}

export type CreateSupervision = (ctx: HostContext) => Supervision;

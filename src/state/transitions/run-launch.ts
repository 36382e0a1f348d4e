/**
 * Launching a worker: `queued/queued` or `running/parked` -> `running/starting` (host claim,
 * new generation, worker epoch `starting`), then `running/running` once the worker is ready.
 */
import type { PiContext } from "../../protocol/pi-launch.ts";
import type { JsonValue } from "../../protocol/canonical-json.ts";
import { acquireClaimInTx, type Claim, claimRunId, runResource } from "../claims.ts";
import {
  protectedWrite,
  workerTarget as target,
  type WorkerWriteOptions,
} from "../protected-write.ts";
import { TransitionError } from "../errors.ts";
import { appendHistory, nextRevision, runRevisionSql } from "../journal.ts";
import { type StateStore } from "../store.ts";
import { execute, queryAll, queryOne } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { decodeValue } from "../values.ts";
import { describeState, expectState, requireRun, setQueueState, setRunState } from "./common.ts";

export interface ClaimRunForLaunchOptions {
  runId: string;
  /** The host's owner id. */
  ownerId: string;
  /** The epoch the launching host holds; the claim is fenced once a newer epoch exists. */
  hostEpoch: number;
  /** Fresh secret token for this claim (kept in host memory only). */
  token: string;
  ttlMs: number;
  /** Opaque id of the worker process about to be spawned. */
  workerEpoch: string;
  /** `fingerprint()` of the launch envelope. */
  launchEnvelopeHash: string;
  /**
   * The process the epoch runs in when it already exists (a run's prepared process); a spawned
   * worker is named by `recordWorkerProcess` right after its fork instead.
   */
  process?: { pid: number; startIdentity: string };
}

export interface LaunchClaim {
  claim: Claim;
  generation: number;
  revision: number;
}

/** Claims a launchable run for a new worker epoch (event `run.launching`). */
export function claimRunForLaunch(store: StateStore, opts: ClaimRunForLaunchOptions): LaunchClaim {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const run = requireRun(store, opts.runId);
    expectState(
      run,
      "launch",
      (r) =>
        !r.paused && !r.blocked_reason &&
        ((r.state === "queued" && r.queue_state === "queued") ||
          (r.state === "running" && r.queue_state === "parked")),
    );
    const active = queryOne<{ worker_epoch: string }>(
      store,
      "SELECT worker_epoch FROM run_workers WHERE run_id = :runId AND status IN ('starting', 'live')",
      { runId: opts.runId },
    );
    if (active) {
      throw new TransitionError(
        opts.runId,
        "launch",
        describeState(run),
        "a previous worker epoch is still active; finish it first",
      );
    }
    const claim = acquireClaimInTx(store, {
      resource: runResource(opts.runId),
      runId: opts.runId,
      ownerType: "host",
      ownerId: opts.ownerId,
      hostEpoch: opts.hostEpoch,
      token: opts.token,
      ttlMs: opts.ttlMs,
    }, now);
    const revision = nextRevision(store, opts.runId);
    setRunState(store, opts.runId, "running", now);
    setQueueState(store, opts.runId, "starting", now);
    execute(
      store,
      "INSERT INTO run_workers (worker_epoch, run_id, generation, launch_envelope_hash, status, " +
        "started_at, pid, start_identity) VALUES (:workerEpoch, :runId, :generation, :hash, " +
        "'starting', :now, :pid, :startIdentity)",
      {
        workerEpoch: opts.workerEpoch,
        runId: opts.runId,
        generation: claim.generation,
        hash: opts.launchEnvelopeHash,
        now,
        pid: opts.process?.pid ?? null,
        startIdentity: opts.process?.startIdentity ?? null,
      },
    );
    appendHistory(store, opts.runId, revision, now, {
      type: "run.launching",
      payload: { generation: claim.generation, workerEpoch: opts.workerEpoch },
    });
    return { claim, generation: claim.generation, revision };
  });
}

/** What the scheduler needs to build a launch envelope. */
export interface LaunchableRun {
  runId: string;
  workflowName: string;
  workflowRef: string;
  projectPath: string;
  workflowSource: JsonValue;
  definitionDigest: string;
  inputHash: string;
  executionMode: "interactive" | "headless";
  /**
   * The Pi command, model arguments and what Pi loads, recorded for a headless run; null when
   * none.
   */
  pi: { command: string; args: string[]; context: PiContext } | null;
  /** The run's Pi session file (headless runs with Pi). */
  piSession: string | null;
  /** Revision the scheduler read; pass-through for diagnostics. */
  revision: number;
}

/**
 * Runs the scheduler may launch now: queued, or running/parked, not paused, not blocked, whose
 * available time has come; highest priority first, then creation order.
 */
export function nextLaunchableRuns(
  store: StateStore,
  limit: number,
  now = store.clock.now(),
): LaunchableRun[] {
  const rows = queryAll<{
    run_id: string;
    workflow_name: string;
    workflow_ref: string;
    project_path: string;
    workflow_source_json: string;
    definition_digest: string;
    input_hash: string;
    execution_mode: "interactive" | "headless";
    pi_command: string | null;
    pi_args_json: string | null;
    pi_context: PiContext | null;
    pi_session_file: string | null;
    revision: number;
  }>(
    store,
    "SELECT r.run_id, r.workflow_name, r.workflow_ref, r.project_path, r.workflow_source_json, " +
      "r.definition_digest, r.input_hash, b.execution_mode, b.pi_command, b.pi_args_json, " +
      "b.pi_context, b.pi_session_file, " +
      `${runRevisionSql()} AS revision FROM run_queue q ` +
      "JOIN runs r ON r.run_id = q.run_id JOIN run_bindings b ON b.run_id = r.run_id " +
      "WHERE q.state IN ('queued', 'parked') AND r.state IN ('queued', 'running') " +
      "AND r.paused = 0 AND r.blocked_reason IS NULL AND q.available_at <= :now " +
      "AND NOT EXISTS (SELECT 1 FROM run_workers w WHERE w.run_id = r.run_id " +
      "AND w.status IN ('starting', 'live')) " +
      "ORDER BY q.priority DESC, q.enqueued_seq LIMIT :limit",
    { now, limit: Math.max(0, Math.floor(limit)) },
  );
  return rows.map((r) => ({
    runId: r.run_id,
    workflowName: r.workflow_name,
    workflowRef: r.workflow_ref,
    projectPath: r.project_path,
    workflowSource: decodeValue(r.workflow_source_json) ?? null,
    definitionDigest: r.definition_digest,
    inputHash: r.input_hash,
    executionMode: r.execution_mode,
    pi: r.pi_command === null ? null : {
      command: r.pi_command,
      args: (decodeValue(r.pi_args_json) ?? []) as string[],
      context: r.pi_context ?? "none",
    },
    piSession: r.pi_session_file,
    revision: r.revision,
  }));
}

export interface MarkWorkerLiveOptions extends WorkerWriteOptions {
  workerEpoch: string;
  pid: number;
  /** Process start identity (e.g. /proc/PID/stat start time), not only the pid. */
  startIdentity: string;
}

/** `running/starting` -> `running/running` when the worker's ready message arrives. */
export function markWorkerLive(
  store: StateStore,
  claim: Claim,
  opts: MarkWorkerLiveOptions,
): { revision: number } {
  const runId = claimRunId(claim);
  const { revision } = protectedWrite(store, claim, target(runId, opts), (tx) => {
    expectState(
      tx.run,
      "mark worker live",
      (r) => r.state === "running" && r.queue_state === "starting",
    );
    const changed = execute(
      store,
      "UPDATE run_workers SET status = 'live', pid = :pid, start_identity = :startIdentity, " +
        "ready_at = :now WHERE worker_epoch = :workerEpoch AND run_id = :runId " +
        "AND generation = :generation AND status = 'starting'",
      {
        pid: opts.pid,
        startIdentity: opts.startIdentity,
        now: tx.now,
        workerEpoch: opts.workerEpoch,
        runId,
        generation: claim.generation,
      },
    );
    if (changed !== 1) {
      throw new TransitionError(
        runId,
        "mark worker live",
        describeState(tx.run),
        `worker epoch ${opts.workerEpoch} is not the starting epoch of generation ${claim.generation}`,
      );
    }
    setQueueState(store, runId, "running", tx.now);
    return {
      type: "worker.live",
      payload: { generation: claim.generation, workerEpoch: opts.workerEpoch },
      result: undefined,
    };
  });
  return { revision };
}

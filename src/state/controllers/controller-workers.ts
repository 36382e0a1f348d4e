/**
 * Controller worker epochs (`controller_workers`) and the controller's blocked state. One worker
 * process per controller at a time; its record holds the PID and start identity so a restarted
 * host reaps exactly that process and nothing else.
 */
import type { PiLaunch } from "../../protocol/pi-launch.ts";
import { type StateStore } from "../store.ts";
import { execute, queryAll, queryOne } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { decodeValue } from "../values.ts";
import { appendControllerEvent } from "./controller-records.ts";

export const CONTROLLER_WORKER_OUTCOMES = [
  "exited",
  "cancelled",
  "timedOut",
  "crashed",
  "orphaned",
] as const;
export type ControllerWorkerOutcome = (typeof CONTROLLER_WORKER_OUTCOMES)[number];

export interface PinnedController {
  controllerId: string;
  name: string;
  projectPath: string;
  sourceRef: string;
  sourceJson: string;
  sourceDigest: string;
  timeoutMs: number;
  blockedReason: string | null;
  /** The Pi launch declared for child runs' agent steps, or null. */
  pi: PiLaunch | null;
}

export function readPinnedController(
  store: StateStore,
  controllerId: string,
): PinnedController | undefined {
  const row = queryOne<{
    controller_id: string;
    name: string;
    project_path: string;
    source_ref: string;
    source_json: string;
    source_digest: string;
    timeout_ms: number;
    blocked_reason: string | null;
    pi_command: string | null;
    pi_args_json: string | null;
  }>(
    store,
    "SELECT controller_id, name, project_path, source_ref, source_json, source_digest, " +
      "timeout_ms, blocked_reason, pi_command, pi_args_json FROM controllers " +
      "WHERE controller_id = :controllerId",
    { controllerId },
  );
  return row && {
    controllerId: row.controller_id,
    name: row.name,
    projectPath: row.project_path,
    sourceRef: row.source_ref,
    sourceJson: row.source_json,
    sourceDigest: row.source_digest,
    timeoutMs: row.timeout_ms,
    blockedReason: row.blocked_reason,
    pi: row.pi_command === null
      ? null
      : { command: row.pi_command, args: (decodeValue(row.pi_args_json) ?? []) as string[] },
  };
}

/** Records a new `starting` epoch for the controller (one active at a time). */
export function startControllerWorker(
  store: StateStore,
  opts: { workerEpoch: string; controllerId: string; sourceDigest: string },
): void {
  writeTransaction(store, () => {
    execute(
      store,
      "INSERT INTO controller_workers (worker_epoch, controller_id, source_digest, status, " +
        "started_at) VALUES (:workerEpoch, :controllerId, :sourceDigest, 'starting', :now)",
      { ...opts, now: store.clock.now() },
    );
  });
}

/** The spawned process: PID and start identity (before it can do anything). */
export function recordControllerWorkerProcess(
  store: StateStore,
  opts: { workerEpoch: string; pid: number; startIdentity: string },
): void {
  writeTransaction(store, () => {
    execute(
      store,
      "UPDATE controller_workers SET pid = :pid, start_identity = :startIdentity " +
        "WHERE worker_epoch = :workerEpoch AND status = 'starting'",
      opts,
    );
  });
}

export function markControllerWorkerLive(store: StateStore, workerEpoch: string): void {
  writeTransaction(store, () => {
    execute(
      store,
      "UPDATE controller_workers SET status = 'live', ready_at = :now WHERE worker_epoch = " +
        ":workerEpoch AND status = 'starting'",
      { workerEpoch, now: store.clock.now() },
    );
  });
}

/** Records the one terminal outcome of an active epoch; false when it already ended. */
export function finishControllerWorker(
  store: StateStore,
  opts: {
    workerEpoch: string;
    status: ControllerWorkerOutcome;
    exitCode: number | null;
    signal: string | null;
  },
): boolean {
  return writeTransaction(store, () =>
    execute(
      store,
      "UPDATE controller_workers SET status = :status, finished_at = :now, exit_code = " +
        ":exitCode, signal = :signal WHERE worker_epoch = :workerEpoch AND status IN " +
        "('starting', 'live')",
      { ...opts, now: store.clock.now() },
    ) === 1);
}

export interface ActiveControllerWorker {
  workerEpoch: string;
  startIdentity: string | null;
}

/** Epochs an earlier host left `starting` or `live` (recovery reaps and records them). */
export function listActiveControllerWorkers(store: StateStore): ActiveControllerWorker[] {
  return queryAll<{ worker_epoch: string; start_identity: string | null }>(
    store,
    "SELECT worker_epoch, start_identity FROM controller_workers WHERE status IN " +
      "('starting', 'live')",
  ).map((r) => ({ workerEpoch: r.worker_epoch, startIdentity: r.start_identity }));
}

/**
 * The controller's files no longer match its pinned source (`sourceChanged`), or the pinned
 * source does not load (`loadFailed`): no reconcile runs until `controller.apply` pins a
 * verified source again.
 */
export function blockController(
  store: StateStore,
  opts: {
    controllerId: string;
    sourceDigest: string;
    reason: "sourceChanged" | "loadFailed";
    detail: string;
  },
): boolean {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const changed = execute(
      store,
      "UPDATE controllers SET blocked_reason = :reason, blocked_detail = :detail, " +
        "revision = revision + 1, updated_at = :now WHERE controller_id = :controllerId AND " +
        "source_digest = :sourceDigest AND blocked_reason IS NULL",
      { ...opts, detail: opts.detail.slice(0, 1024), now },
    );
    if (changed === 1) {
      for (
        const r of queryAll<{ uid: string; resource_version: number }>(
          store,
          "SELECT uid, resource_version FROM controller_resources WHERE controller_id = " +
            ":controllerId AND removed_at IS NULL",
          { controllerId: opts.controllerId },
        )
      ) {
        appendControllerEvent(store, r.uid, r.resource_version, "controller.blocked", {
          reason: opts.reason,
        }, now);
      }
    }
    return changed === 1;
  });
}

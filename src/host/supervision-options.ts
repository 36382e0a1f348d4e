/**
 * Supervision tunables, each with a documented default (docs/workers.md). The host main reads
 * them with `readSupervisionOptions(process.env)`; tests pass short values directly.
 */
import { readPositiveIntegerOptions } from "../os/env-integer.ts";
import type { SupervisionOptions } from "./host-context.ts";

export const DEFAULT_SUPERVISION_OPTIONS: Required<SupervisionOptions> = {
  /** Two cores are common; more workers than that mostly queue for CPU. */
  maxConcurrentWorkers: 4,
  claimTtlMs: 30_000,
  claimRenewMs: 10_000,
  /** Generous: a cold `node` start with type stripping takes ~250 ms on a slow VM. */
  workerStartupMs: 15_000,
  killGraceMs: 2_000,
  /** Per stream (stdout, stderr) and worker epoch. */
  maxCapturedOutputBytes: 4 * 1024 * 1024,
  boundaryMs: 30_000,
  /** Below the host lease (15 s), so a draining host never outlives its own epoch. */
  stopWaitMs: 10_000,
  /** Like workers: a resolver is a whole runtime loading workflow code (~80 MB each). */
  maxConcurrentResolvers: 4,
  maxWorkerMemoryMb: 1024,
  /** At least 8 epochs' worth at the full output cap. */
  maxWorkerLogsMb: 64,
  /** A run process is ~50-80 MB: a few interactive runs, each waiting on its Pi session. */
  maxPreparedChildren: 4,
  /** A model step is usually answered within minutes; a person's wait needs no process. */
  preparedIdleMs: 5 * 60_000,
};

const ENV_NAMES = {
  maxConcurrentWorkers: "PI_WORKFLOWS_MAX_WORKERS",
  claimTtlMs: "PI_WORKFLOWS_CLAIM_TTL_MS",
  claimRenewMs: "PI_WORKFLOWS_CLAIM_RENEW_MS",
  workerStartupMs: "PI_WORKFLOWS_WORKER_STARTUP_MS",
  killGraceMs: "PI_WORKFLOWS_KILL_GRACE_MS",
  maxCapturedOutputBytes: "PI_WORKFLOWS_WORKER_OUTPUT_BYTES",
  boundaryMs: "PI_WORKFLOWS_BOUNDARY_MS",
  stopWaitMs: "PI_WORKFLOWS_STOP_WAIT_MS",
  maxConcurrentResolvers: "PI_WORKFLOWS_MAX_RESOLVERS",
  maxWorkerMemoryMb: "PI_WORKFLOWS_WORKER_MEMORY_MB",
  maxWorkerLogsMb: "PI_WORKFLOWS_WORKER_LOGS_MB",
  maxPreparedChildren: "PI_WORKFLOWS_MAX_PREPARED",
  preparedIdleMs: "PI_WORKFLOWS_PREPARED_IDLE_MS",
} as const satisfies Record<keyof SupervisionOptions, string>;

/** Reads options from `env`; an invalid value is a one-line error naming the variable. */
export function readSupervisionOptions(
  env: NodeJS.ProcessEnv = process.env,
): SupervisionOptions {
  // `PI_WORKFLOWS_MAX_PREPARED=0` keeps no process after an epoch (every step starts fresh).
  const { [ENV_NAMES.maxPreparedChildren]: maxPrepared, ...rest } = env;
  const none = maxPrepared?.trim() === "0";
  const options = readPositiveIntegerOptions(
    none ? rest : env,
    ENV_NAMES,
    DEFAULT_SUPERVISION_OPTIONS,
  );
  if (none) options.maxPreparedChildren = 0;
  if (options.claimRenewMs >= options.claimTtlMs) {
    // Name the variables: the person set one of them, maybe not the other.
    const unset = (key: keyof SupervisionOptions) => (env[ENV_NAMES[key]] ?? "") === "";
    const shown = (key: "claimTtlMs" | "claimRenewMs") =>
      `${ENV_NAMES[key]} (${options[key]}${unset(key) ? ", the default" : ""})`;
    throw new RangeError(
      `Invalid ${ENV_NAMES.claimRenewMs}: ${shown("claimRenewMs")} must be below ${
        shown("claimTtlMs")
      }: set both`,
    );
  }
  return validateSupervisionOptions(options);
}

/** Rejects combinations that would let a live claim lapse between renewals. */
export function validateSupervisionOptions(options: SupervisionOptions): SupervisionOptions {
  if (options.claimRenewMs >= options.claimTtlMs) {
    throw new RangeError(
      `Invalid supervision options: claimRenewMs must be below claimTtlMs (${options.claimTtlMs}), got ${options.claimRenewMs}`,
    );
  }
  return options;
}

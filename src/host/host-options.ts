/**
 * Host tunables read from the environment, each with a documented default (docs/host.md).
 * Tests shorten them (a 300 ms idle period, a 1 s host lease) instead of sleeping.
 */
import { readPositiveIntegerEnv, readPositiveIntegerOptions } from "../os/env-integer.ts";

export { readPositiveIntegerEnv };

export interface HostOptions {
  /** An idle host (no client, worker, wake or unsettled work) exits after this long. */
  idleMs: number;
  /** Length of the global host lease. Another host may take over once it has expired. */
  hostClaimTtlMs: number;
  /** How often the host renews its lease; well under the lease length. */
  hostClaimRenewMs: number;
  /** How long a client may leave a frame unfinished before its connection is closed. */
  partialFrameMs: number;
  /** Bytes of host log kept in `<stateDir>/host.log` before it is rotated to `host.log.1`. */
  maxLogBytes: number;
  /** An idle host starts a retention pass at most this often. */
  retentionIntervalMs: number;
}

export const DEFAULT_HOST_OPTIONS: HostOptions = {
  idleMs: 5 * 60_000,
  hostClaimTtlMs: 15_000,
  hostClaimRenewMs: 5_000,
  partialFrameMs: 10_000,
  maxLogBytes: 1024 * 1024,
  retentionIntervalMs: 6 * 3600_000,
};

const ENV_NAMES = {
  idleMs: "PI_WORKFLOWS_HOST_IDLE_MS",
  hostClaimTtlMs: "PI_WORKFLOWS_HOST_CLAIM_TTL_MS",
  hostClaimRenewMs: "PI_WORKFLOWS_HOST_RENEW_MS",
  partialFrameMs: "PI_WORKFLOWS_HOST_PARTIAL_FRAME_MS",
  maxLogBytes: "PI_WORKFLOWS_HOST_LOG_BYTES",
  retentionIntervalMs: "PI_WORKFLOWS_RETENTION_INTERVAL_MS",
} as const satisfies Record<keyof HostOptions, string>;

/** Reads host options from `env`; an invalid value is a one-line error naming the variable. */
export function readHostOptions(env: NodeJS.ProcessEnv = process.env): HostOptions {
  const options: HostOptions = readPositiveIntegerOptions(env, ENV_NAMES, DEFAULT_HOST_OPTIONS);
  // A renewal interval at or above the lease would let the lease lapse between renewals.
  if (env[ENV_NAMES.hostClaimRenewMs] === undefined || env[ENV_NAMES.hostClaimRenewMs] === "") {
    options.hostClaimRenewMs = Math.max(1, Math.floor(options.hostClaimTtlMs / 3));
  }
  if (options.hostClaimRenewMs >= options.hostClaimTtlMs) {
    throw new RangeError(
      `Invalid ${ENV_NAMES.hostClaimRenewMs}: must be below ${ENV_NAMES.hostClaimTtlMs} (${options.hostClaimTtlMs}), got ${options.hostClaimRenewMs}`,
    );
  }
  return options;
}

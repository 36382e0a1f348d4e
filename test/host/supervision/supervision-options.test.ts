import { describe, expect, it } from "vitest";
import {
  DEFAULT_SUPERVISION_OPTIONS,
  readSupervisionOptions,
} from "../../../src/host/supervision-options.ts";

describe("readSupervisionOptions()", () => {
  it("keeps the documented defaults when nothing is set", () => {
    expect(readSupervisionOptions({})).toEqual(DEFAULT_SUPERVISION_OPTIONS);
  });

  it("reads each tunable from its variable", () => {
    const options = readSupervisionOptions({
      PI_WORKFLOWS_MAX_WORKERS: "2",
      PI_WORKFLOWS_CLAIM_TTL_MS: "6000",
      PI_WORKFLOWS_CLAIM_RENEW_MS: "2000",
      PI_WORKFLOWS_WORKER_STARTUP_MS: "900",
      PI_WORKFLOWS_KILL_GRACE_MS: "50",
      PI_WORKFLOWS_WORKER_OUTPUT_BYTES: "1024",
      PI_WORKFLOWS_BOUNDARY_MS: "700",
      PI_WORKFLOWS_STOP_WAIT_MS: "800",
      PI_WORKFLOWS_MAX_RESOLVERS: "3",
      PI_WORKFLOWS_WORKER_MEMORY_MB: "300",
      PI_WORKFLOWS_WORKER_LOGS_MB: "5",
      PI_WORKFLOWS_MAX_PREPARED: "2",
      PI_WORKFLOWS_PREPARED_IDLE_MS: "1500",
    });
    expect(options).toEqual({
      maxConcurrentWorkers: 2,
      claimTtlMs: 6000,
      claimRenewMs: 2000,
      workerStartupMs: 900,
      killGraceMs: 50,
      maxCapturedOutputBytes: 1024,
      boundaryMs: 700,
      stopWaitMs: 800,
      maxConcurrentResolvers: 3,
      maxWorkerMemoryMb: 300,
      maxWorkerLogsMb: 5,
      maxPreparedChildren: 2,
      preparedIdleMs: 1500,
    });
    // Zero prepared processes is a valid choice (every step starts fresh children).
    expect(readSupervisionOptions({ PI_WORKFLOWS_MAX_PREPARED: "0" }).maxPreparedChildren).toBe(0);
  });

  it("refuses a bad value with one line naming the variable", () => {
    expect(() => readSupervisionOptions({ PI_WORKFLOWS_MAX_WORKERS: "two" })).toThrow(
      /^Invalid PI_WORKFLOWS_MAX_WORKERS: .*"two"$/,
    );
    expect(() => readSupervisionOptions({ PI_WORKFLOWS_KILL_GRACE_MS: "0" })).toThrow(
      /PI_WORKFLOWS_KILL_GRACE_MS/,
    );
  });

  it("refuses a renewal interval that would let a claim lapse", () => {
    expect(() =>
      readSupervisionOptions({
        PI_WORKFLOWS_CLAIM_TTL_MS: "1000",
        PI_WORKFLOWS_CLAIM_RENEW_MS: "1000",
      })
    ).toThrow(
      "Invalid PI_WORKFLOWS_CLAIM_RENEW_MS: PI_WORKFLOWS_CLAIM_RENEW_MS (1000) must be below PI_WORKFLOWS_CLAIM_TTL_MS (1000): set both",
    );
    // Only the lease set: the message says the renewal interval is the default.
    expect(() => readSupervisionOptions({ PI_WORKFLOWS_CLAIM_TTL_MS: "10" })).toThrow(
      "PI_WORKFLOWS_CLAIM_RENEW_MS (10000, the default) must be below PI_WORKFLOWS_CLAIM_TTL_MS (10)",
    );
  });
});

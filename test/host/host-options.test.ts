import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/base/clock.ts";
import { createHostLog, logError } from "../../src/host/host-log.ts";
import { DEFAULT_HOST_OPTIONS, readHostOptions } from "../../src/host/host-options.ts";
import { createIdleTracker, idleCheckIntervalMs } from "../../src/host/idle-tracker.ts";

describe("readHostOptions()", () => {
  it("uses documented defaults and derives the renewal interval from the lease", () => {
    expect(readHostOptions({})).toEqual(DEFAULT_HOST_OPTIONS);
    expect(readHostOptions({ PI_WORKFLOWS_HOST_CLAIM_TTL_MS: "900" })).toMatchObject({
      hostClaimTtlMs: 900,
      hostClaimRenewMs: 300,
    });
    expect(readHostOptions({ PI_WORKFLOWS_HOST_IDLE_MS: " 250 " }).idleMs).toBe(250);
  });

  it("refuses bad values with one line naming the variable", () => {
    expect(() => readHostOptions({ PI_WORKFLOWS_HOST_IDLE_MS: "-5" })).toThrow(
      'Invalid PI_WORKFLOWS_HOST_IDLE_MS: expected a whole number, got "-5"',
    );
    expect(() => readHostOptions({ PI_WORKFLOWS_HOST_PARTIAL_FRAME_MS: "0" })).toThrow(
      "Invalid PI_WORKFLOWS_HOST_PARTIAL_FRAME_MS: expected at least 1",
    );
    expect(() =>
      readHostOptions({
        PI_WORKFLOWS_HOST_CLAIM_TTL_MS: "1000",
        PI_WORKFLOWS_HOST_RENEW_MS: "1000",
      })
    ).toThrow("Invalid PI_WORKFLOWS_HOST_RENEW_MS: must be below PI_WORKFLOWS_HOST_CLAIM_TTL_MS");
  });
});

describe("createIdleTracker()", () => {
  it("reports idle only after a whole idle period without activity", () => {
    const clock = new FakeClock();
    const idle = createIdleTracker(clock, 1000);
    expect(idle.check(false)).toBe(false);
    clock.advance(999);
    expect(idle.check(false)).toBe(false);
    clock.advance(1);
    expect(idle.check(false)).toBe(true);
    expect(idle.check(true)).toBe(false);
    clock.advance(5000);
    expect(idle.check(false)).toBe(false); // the period restarts after activity
    clock.advance(1000);
    expect(idle.check(false)).toBe(true);
  });

  it("samples often enough but not wastefully", () => {
    expect(idleCheckIntervalMs(300_000)).toBe(1000);
    expect(idleCheckIntervalMs(400)).toBe(100);
    expect(idleCheckIntervalMs(10)).toBe(25);
  });
});

describe("createHostLog()", () => {
  it("writes one flat line per event and stops at its byte budget", () => {
    const lines: string[] = [];
    const log = createHostLog({
      clock: new FakeClock(0),
      maxBytes: 200,
      write: (l) => lines.push(l),
    });
    log("run.queued", { runId: "run-1", detail: "two\nlines here" });
    expect(lines[0]).toBe(
      "1970-01-01T00:00:00.000Z run.queued runId=run-1 detail=two_lines_here\n",
    );
    for (let i = 0; i < 10; i++) log("spam", { i });
    expect(lines.at(-1)).toContain("log.limit");
    const count = lines.length;
    log("after", {});
    expect(lines).toHaveLength(count);
    expect(lines.join("").length).toBeLessThanOrEqual(200 + 100);
  });
});

describe("logError()", () => {
  it("keeps the real cause, one bounded line, without paths", () => {
    const error = new Error(
      "SQLITE_CORRUPT: database disk image is malformed at /home/ann/.pi/agent/workflows/state.sqlite\nstack",
    );
    error.name = "SqliteError";
    expect(logError(error)).toBe(
      "SqliteError: SQLITE_CORRUPT: database disk image is malformed at <path>",
    );
    expect(logError(new Error("x".repeat(500))).length).toBeLessThanOrEqual(161);
    expect(logError("plain")).toBe("unknown: plain");
  });
});

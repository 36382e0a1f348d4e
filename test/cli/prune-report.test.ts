/**
 * `pi-workflows prune`'s text (formatPruneReport): its first line says what went, ended runs or,
 * when none did, the other rows (controller history, receipts of no run, snapshots).
 */
import { describe, expect, it } from "vitest";
import { formatPruneReport } from "../../src/cli/prune-command.ts";
import {
  ENDED_RUN_RECEIPTS,
  type HostPruneReceipt,
} from "../../src/protocol/retention-operations.ts";

const receipt = (extra: Partial<HostPruneReceipt>): HostPruneReceipt => ({
  dryRun: false,
  keepDays: 30,
  cutoff: 0,
  runs: 0,
  rows: {},
  compactedRuns: 0,
  trimmedDeltas: 0,
  bytes: 0,
  fileBytesBefore: 4096,
  fileBytesAfter: 4096,
  transactions: 0,
  longestLockMs: 0,
  longestLockMsByPhase: {},
  finishedAt: 0,
  ...extra,
});

describe("prune's report", () => {
  it("names the ended runs that went", () => {
    const lines = formatPruneReport(
      receipt({ runs: 2, rows: { runs: 2, events: 30 }, bytes: 20_480 }),
    );
    expect(lines[0]).toBe("Removed 2 ended runs older than 30 days (20.0 KiB)");
    expect(lines[1]).toBe("  rows: events 30, runs 2");
  });

  it("names the controller history that went when no ended run did", () => {
    const lines = formatPruneReport(
      receipt({ rows: { controller_workers: 2, controller_events: 5 }, bytes: 1_300 }),
    );
    expect(lines[0]).toBe(
      "Removed 5 controller events and 2 controller worker epochs older than 30 days (1.3 KiB), " +
        "no ended runs",
    );
    const dry = formatPruneReport(
      receipt({ dryRun: true, keepDays: 1, rows: { controller_events: 1 }, bytes: 300 }),
    );
    expect(dry[0]).toBe(
      "Would remove 1 controller event older than 1 day (about 300 B), no ended runs",
    );
    const receipts = formatPruneReport(
      receipt({ rows: { host_commands: 3, workflow_definitions: 1, controller_events: 4 } }),
    );
    expect(receipts[0]).toBe(
      "Removed 4 controller events and 3 client receipts of no run older than 30 days and " +
        "1 unused definition snapshot (0 B), no ended runs",
    );
  });

  it("gives no age to unused definition snapshots, which go with no age rule", () => {
    const lines = formatPruneReport(receipt({ rows: { workflow_definitions: 2 }, bytes: 2_048 }));
    expect(lines[0]).toBe("Removed 2 unused definition snapshots (2.0 KiB), no ended runs");
  });

  it("names the receipts deleted before their run's mark apart from those of no run", () => {
    // The run was then kept (referenced meanwhile): its receipts went, it did not.
    const lines = formatPruneReport(
      receipt({ rows: { [ENDED_RUN_RECEIPTS]: 1, host_commands: 2 }, bytes: 600 }),
    );
    expect(lines[0]).toBe(
      "Removed 2 client receipts of no run and 1 client receipt of an ended run older than " +
        "30 days (600 B), no ended runs",
    );
    expect(lines[1]).toBe(`  rows: host_commands 2, ${ENDED_RUN_RECEIPTS} 1`);
  });

  it("says 0 ended runs when nothing went", () => {
    expect(formatPruneReport(receipt({}))[0]).toBe("Removed 0 ended runs older than 30 days (0 B)");
  });
});

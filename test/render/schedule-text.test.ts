/**
 * `schedule show` as text: a firing's run is shown the way every run id is (`run-1a2b3c4d`, a
 * prefix the run commands take), and each firing says in words what it did.
 */
import { describe, expect, it } from "vitest";
import { formatScheduleDetail } from "../../src/render/schedule-text.ts";
import { scheduleRunId } from "../../src/state/schedules/schedule-records.ts";
import type { ScheduleView } from "../../src/protocol/schedule-operations.ts";

const NOW = Date.UTC(2026, 11, 7, 9);

const schedule: ScheduleView = {
  name: "tick",
  workflow: "tick",
  workflowName: "tick",
  every: "1s",
  overlap: "skip",
  catchUp: "none",
  state: "enabled",
  pausedReason: null,
  nextFireAt: NOW + 1000,
  lastFiredAt: NOW,
  missedSlots: 0,
  loadFailures: 0,
  revision: 1,
  createdAt: NOW - 60_000,
};

describe("formatScheduleDetail()", () => {
  it("shows each firing's run by its short id", () => {
    const started = scheduleRunId("sch-1a2b3c4d-0000-4000-8000-000000000000", NOW);
    const failed = scheduleRunId("sch-1a2b3c4d-0000-4000-8000-000000000000", NOW - 2000);
    const text = formatScheduleDetail({
      schedule,
      firings: [
        { slotAt: NOW, state: "started", runId: started },
        { slotAt: NOW - 1000, state: "skipped", reason: "overlap" },
        { slotAt: NOW - 2000, state: "failed", runId: failed, reason: "it does not load" },
        { slotAt: NOW - 3000, state: "pending" },
        { slotAt: NOW - 4000, state: "skipped", reason: "superseded" },
      ],
    }, NOW);
    const lines = text.split("\n").slice(-5);
    expect(lines[0]).toMatch(new RegExp(`  started ${started.slice(0, 12)}$`));
    expect(lines[1]).toMatch(/ {2}skipped \(the previous run was active or starting\)$/);
    expect(lines[2]).toMatch(new RegExp(`  failed ${failed.slice(0, 12)}: it does not load$`));
    expect(lines[3]).toMatch(/ {2}starting$/);
    expect(lines[4]).toMatch(/ {2}skipped \(a later slot came before it started\)$/);
  });
});

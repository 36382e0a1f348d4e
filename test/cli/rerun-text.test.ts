/**
 * What `rerun` and `retry` print: run ids as every text output shows them (`run-1a2b3c4d`, a
 * prefix every command takes), the retry as the rerun it stands for, the fork's one head line.
 */
import { describe, expect, it } from "vitest";
import { rerunText } from "../../src/cli/rerun-command.ts";
import { PLAIN_STYLE } from "../../src/cli/cli-style.ts";
import type { CliIo } from "../../src/cli/output.ts";
import type { RunRerunReceipt } from "../../src/protocol/rerun-operations.ts";

const PARENT = "run-4ec15454-3496-4c40-ba06-f39eae196fa4";
const FORK = "run-eae109d1-0000-4000-8000-000000000001";

const receipt = {
  run: {
    runId: FORK,
    workflowName: "flaky",
    title: null,
    state: "queued",
    queueState: "queued",
    paused: false,
    revision: 1,
    executionMode: "headless",
    createdAt: 0,
    updatedAt: 0,
    forkedFrom: { runId: PARENT, nodeId: "build" },
  },
  from: { runId: PARENT, nodeId: "build", visit: 1 },
  adoptedAttempts: 1,
  source: "current",
} as RunRerunReceipt;

describe("rerunText()", () => {
  it("shows the parent and the fork by their short ids", () => {
    const io = { style: PLAIN_STYLE } as CliIo;
    expect(rerunText(receipt, true, io).split("\n")).toEqual([
      "retry run-4ec15454 = rerun run-4ec15454 --from build --source current",
      "Forked run-eae109d1  flaky  queued",
      "  from run-4ec15454 at build (visit 1); adopted 1 step(s) without running them again; " +
      "source: the workflow file as it is now",
    ]);
  });
});

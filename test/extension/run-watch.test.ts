/**
 * RunWatch announces a run's end once. The session follows its run from several sources (the
 * long poll's `activeRun`, the last step claim, the current step), and a read made before the
 * run ended may name it after the end was already announced: that must not follow the run again
 * (in the real Pi one completion showed as up to three "Workflow … completed" notices).
 */
import { describe, expect, it } from "vitest";
import { RunWatch } from "../../src/extension/run-watch.ts";
import type { HostClient } from "../../src/client/host-client.ts";
import type { PiExtensionApi, PiSessionManager, PiUi } from "../../src/extension/pi-api.ts";
import type { RunSummary } from "../../src/protocol/run-operations.ts";

const T0 = Date.UTC(2026, 0, 1);

function summary(state: string): RunSummary {
  return {
    runId: "run-1",
    workflowName: "demo",
    title: null,
    state,
    queueState: state === "completed" ? "done" : "running",
    paused: false,
    revision: 3,
    executionMode: "interactive",
    createdAt: T0,
    updatedAt: T0,
  } as RunSummary;
}

function watch() {
  let state = "running";
  const notices: string[] = [];
  const reads: string[] = [];
  const client = {
    call: (operation: string, options: { runId: string }) => {
      reads.push(`${operation} ${options.runId}`);
      return Promise.resolve({ run: summary(state), attempts: [], updates: [] });
    },
  } as unknown as HostClient;
  const ui: PiUi = {
    notify: (message) => notices.push(message),
    setStatus: () => {},
    setWidget: () => {},
  };
  const runs = new RunWatch({
    pi: {} as PiExtensionApi,
    client,
    ui: () => ui,
    session: () =>
      ({
        getSessionId: () => "s",
        getBranch: () => [],
        getLeafId: () => null,
        getEntry: () => undefined,
      }) as PiSessionManager,
    detailFor: () => null,
  });
  return { runs, notices, reads, end: () => (state = "completed") };
}

describe("RunWatch", () => {
  it("announces a run's end once, however often a stale read names the run again", async () => {
    const { runs, notices, reads, end } = watch();
    runs.follow("run-1");
    await runs.refresh(T0);
    expect(notices).toEqual([]);
    end();
    await runs.refresh(T0 + 1_000);
    expect(notices).toEqual(["Workflow demo completed (run-1)"]);
    // A claim or poll answered before the end still names the run.
    runs.follow("run-1");
    await runs.refresh(T0 + 2_000);
    expect(notices).toHaveLength(1);
    // Also after the finished widget is cleared.
    await runs.refresh(T0 + 120_000);
    runs.follow("run-1");
    await runs.refresh(T0 + 121_000);
    expect(notices).toHaveLength(1);
    expect(reads).toEqual(["run.status run-1", "run.status run-1"]);
  });
});

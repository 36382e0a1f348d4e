import { describe, expect, it } from "vitest";
import {
  duration,
  MAX_WIDGET_LINES,
  statusLine,
  widgetLines,
} from "../../src/extension/progress-view.ts";
import type { AttemptSummary, RunSummary } from "../../src/protocol/run-operations.ts";

const T0 = Date.UTC(2026, 0, 1);

function run(over: Partial<RunSummary> = {}): RunSummary {
  return {
    runId: "run-1",
    workflowName: "demo",
    title: null,
    state: "running",
    queueState: "running",
    paused: false,
    revision: 3,
    executionMode: "interactive",
    createdAt: T0,
    updatedAt: T0,
    ...over,
  };
}

function attempt(sequence: number, nodeId: string, over: Partial<AttemptSummary> = {}) {
  return {
    attemptId: `att-${sequence}`,
    nodeId,
    sequence,
    nodeKind: "agent",
    effect: "pure",
    state: "ok",
    startedAt: T0 + sequence * 1000,
    finishedAt: T0 + sequence * 1000 + 500,
    deadlineAt: null,
    ...over,
  } as AttemptSummary;
}

describe("progress view", () => {
  it("draws one line per node with glyphs, elapsed, detail and progress ETA", () => {
    const lines = widgetLines({
      run: run(),
      attempts: [
        attempt(1, "draft"),
        attempt(2, "lint", {
          nodeKind: "shell",
          state: "failed",
          error: { code: "x", message: "exit 1" },
        }),
        attempt(3, "review", { state: "running", finishedAt: undefined }),
      ],
      details: { review: "review the plan" },
      updates: [
        {
          nodeId: "review",
          attemptId: "att-3",
          type: "progress",
          key: "files",
          data: { schema: "pi-workflows.progress.v1", completed: 2, total: 4, unit: "files" },
          count: 2,
          updatedAt: T0 + 5000,
        },
        {
          nodeId: "lint",
          attemptId: "att-2",
          type: "status",
          key: "note",
          data: { message: "ignored: the attempt is finished" },
          count: 1,
          updatedAt: T0,
        },
      ],
      now: T0 + 5000,
    });
    expect(lines).toEqual([
      "✓ ● draft  500ms",
      "✗ $ lint  500ms  exit 1",
      "◐ ● review  2s  review the plan  2/4 files 50% ETA 2s",
    ]);
  });

  it("shows the model's latest status note in place of the node's status detail", () => {
    const lines = widgetLines({
      run: run(),
      attempts: [attempt(1, "draft", { state: "running", finishedAt: undefined })],
      details: { draft: "draft a plan" },
      updates: [1, 2].map((n) => ({
        nodeId: "draft",
        attemptId: "att-1",
        type: "status",
        key: `k${n}`,
        data: { message: `note ${n}` },
        count: 1,
        updatedAt: T0 + n,
      })),
      now: T0 + 1000,
    });
    expect(lines).toEqual(["◐ ● draft  0ms  note 2"]);
  });

  it("keeps the latest attempt per node, counts visits and stays within 10 lines", () => {
    const attempts = [
      attempt(1, "loop"),
      attempt(2, "loop", { state: "running", finishedAt: undefined }),
    ];
    for (let i = 0; i < 15; i++) attempts.push(attempt(10 + i, `n${i}`, { nodeKind: "compute" }));
    const lines = widgetLines({ run: run(), attempts, now: T0 + 60_000 });
    expect(lines).toHaveLength(MAX_WIDGET_LINES);
    expect(lines.at(-1)).toBe("✓ ƒ n14  500ms");
    const two = widgetLines({ run: run(), attempts: attempts.slice(0, 2), now: T0 + 3000 });
    expect(two).toEqual(["◐ ● loop ×2  1s"]);
  });

  it("shows a model step waiting on its turn as working, a person's wait as a pause", () => {
    const attempts = [
      attempt(1, "ask", { nodeKind: "checkpoint", state: "waiting", finishedAt: undefined }),
      attempt(2, "draft", { state: "waiting", finishedAt: undefined }),
    ];
    expect(widgetLines({ run: run(), attempts, now: T0 + 4000 })).toEqual([
      "⏸ ◆ ask  3s",
      "◐ ● draft  2s",
    ]);
    // A paused run's model step is not being worked on.
    expect(widgetLines({ run: run({ paused: true }), attempts, now: T0 + 4000 })[1]).toBe(
      "⏸ ● draft  2s",
    );
  });

  it("says the workflow, state and active node in the footer", () => {
    const attempts = [
      attempt(1, "a"),
      attempt(2, "b", { state: "waiting", finishedAt: undefined }),
    ];
    expect(statusLine({ run: run({ title: "Ship it" }), attempts, now: T0 })).toBe(
      "wf Ship it running b",
    );
    expect(statusLine({ run: run({ paused: true }), attempts, now: T0 })).toBe(
      "wf demo running paused b",
    );
    expect(statusLine({ run: run({ state: "completed" }), attempts, now: T0 })).toBe(
      "wf demo completed",
    );
    // An interrupted effect parks the run `running` for review: the footer names the block.
    const interrupted = [attempt(1, "a"), attempt(2, "b", { state: "interrupted" })];
    const blocked = run({ queueState: "parked", blockedReason: "effectAmbiguous" });
    expect(statusLine({ run: blocked, attempts: interrupted, now: T0 })).toBe(
      "wf demo running blocked effectAmbiguous",
    );
  });

  it("formats durations", () => {
    expect([850, 12_000, 184_000, 7_500_000].map(duration)).toEqual([
      "850ms",
      "12s",
      "3m04s",
      "2h05m",
    ]);
  });
});
